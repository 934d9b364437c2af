package main

import (
	"os"
	"testing"
)

// TestGeneratedFilesCurrent fails when the committed assembly differs from
// what tilegen writes now: run `go generate` in package kernels.
func TestGeneratedFilesCurrent(t *testing.T) {
	bf16, dense := files()
	for path, want := range map[string]string{"../../bf16tile512_amd64.s": bf16, "../../dense512_amd64.s": dense} {
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("%s is not what tilegen writes: run go generate in runtime/cpu/internal/kernels", path)
		}
	}
}

// TestVDPBF16PSEncoding checks the hand-built EVEX encoding against
// bytes GNU as writes for the same instructions.
func TestVDPBF16PSEncoding(t *testing.T) {
	for _, tc := range []struct {
		dst, src1, src2 int
		want            string
	}{
		// vdpbf16ps %zmm28,%zmm24,%zmm0 (objdump of the generated tiles)
		{0, 24, 28, "\tBYTE $0x62; BYTE $0x92; BYTE $0x3E; BYTE $0x40; BYTE $0x52; BYTE $0xC4 // VDPBF16PS Z28, Z24, Z0\n"},
		// vdpbf16ps %zmm3,%zmm2,%zmm1: no extended registers
		{1, 2, 3, "\tBYTE $0x62; BYTE $0xF2; BYTE $0x6E; BYTE $0x48; BYTE $0x52; BYTE $0xCB // VDPBF16PS Z3, Z2, Z1\n"},
	} {
		if got := vdpbf16ps(tc.dst, tc.src1, tc.src2); got != tc.want {
			t.Errorf("vdpbf16ps(%d, %d, %d) = %q, want %q", tc.dst, tc.src1, tc.src2, got, tc.want)
		}
	}
}
