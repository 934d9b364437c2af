package builtin

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestArithmeticAnswersAreConsistent re-derives each answer from the
// worked solution's own equations: every "a op b = c" must hold and the
// final "#### N" must be the last result.
func TestArithmeticAnswersAreConsistent(t *testing.T) {
	eq := regexp.MustCompile(`(\d+) ([-+*/]) (\d+) = (\d+)`)
	for _, d := range Arithmetic(300, TestSeed, "t") {
		ans := d.Fields["answer"].(string)
		var last int
		for _, m := range eq.FindAllStringSubmatch(ans, -1) {
			a, _ := strconv.Atoi(m[1])
			b, _ := strconv.Atoi(m[3])
			c, _ := strconv.Atoi(m[4])
			var want int
			switch m[2] {
			case "+":
				want = a + b
			case "-":
				want = a - b
			case "*":
				want = a * b
			case "/":
				if a%b != 0 {
					t.Fatalf("%s: %d / %d is not whole", d.Source, a, b)
				}
				want = a / b
			}
			if c != want {
				t.Fatalf("%s: %s is wrong", d.Source, m[0])
			}
			last = c
		}
		_, final, ok := strings.Cut(ans, "#### ")
		if n, err := strconv.Atoi(final); !ok || err != nil || n != last || n < 0 {
			t.Fatalf("%s: final %q, last step %d", d.Source, final, last)
		}
	}
}

func TestMultipleChoiceGoldIsTheValue(t *testing.T) {
	q := regexp.MustCompile(`^What is (\d+) ([-+*]) (\d+)\?$`)
	for _, d := range MultipleChoice(300, TestSeed, "t") {
		m := q.FindStringSubmatch(d.Fields["question"].(string))
		if m == nil {
			t.Fatalf("%s: question %q", d.Source, d.Fields["question"])
		}
		x, _ := strconv.Atoi(m[1])
		y, _ := strconv.Atoi(m[3])
		v := map[string]int{"+": x + y, "-": x - y, "*": x * y}[m[2]]
		choices := d.Fields["choices"].([]any)
		seen := map[any]bool{}
		for _, c := range choices {
			if seen[c] {
				t.Fatalf("%s: duplicate choice %v", d.Source, c)
			}
			seen[c] = true
		}
		gold := int(d.Fields["answer"].(float64))
		if choices[gold] != strconv.Itoa(v) {
			t.Fatalf("%s: gold %v, value %d", d.Source, choices[gold], v)
		}
	}
}

func TestSeedsDiffer(t *testing.T) {
	a := Arithmetic(5, TestSeed, "a")
	b := Arithmetic(5, FewShotSeed, "b")
	same := 0
	for i := range a {
		if a[i].Fields["question"] == b[i].Fields["question"] {
			same++
		}
	}
	if same == len(a) {
		t.Error("different seeds gave the same documents")
	}
}
