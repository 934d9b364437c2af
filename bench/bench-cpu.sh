#!/usr/bin/env bash
# bench-cpu.sh: the cpu runtime against llama.cpp, side by side, on the same
# GGUF files (written here by `ttisctl model create`: nothing is downloaded).
#
#   bench/bench-cpu.sh LLAMA_BIN_DIR        (or: make bench-cpu LLAMA_BIN=DIR)
#
# LLAMA_BIN_DIR holds llama-bench and llama-server (a llama.cpp CPU build).
# Raw speed: `ttisctl model bench` against `llama-bench` (ppN for each N in PP,
# tg128) and the peak RSS of each process (of the run with the first PP size
# and tg128; the other sizes run apart); served: `ttisd serve` against `llama-server -np N`,
# both measured by `ttisctl bench --url` (random prompts, ignore_eos, greedy
# decoding for both servers) at each concurrency, and llama-server with one
# slot (-np 1) at c=1, its best single-stream configuration. Resident memory
# by kind (the program's executable and libraries, the model file's pages,
# anonymous memory) comes from /proc/PID/smaps: sampled every 50 ms in one
# extra untimed raw run per engine ("rss peak~"), and read once from each
# server after its last served row ("served rss end"). Every repetition runs the two engines back to back, alternating
# which goes first, and the table shows medians and their ratios (ttis/llama).
#
# Environment (defaults in brackets):
#   MODELS         preset:type list for the raw table ["24m:f32 24m:f16 24m:q8_0 134m:f32 134m:f16 134m:q8_0 134m:q4_k"]
#   SERVED_MODELS  preset:type list for the served table ["24m:q8_0 134m:q8_0"]
#   PP             prompt sizes of the raw table ["128 512"]
#   THREADS [2]  REPS [3]  CONCURRENCY ["1 2 4 8 16"]  PROMPTS [16]  ISL [128]  OSL [128]
#   TTISCTL, TTISD  the binaries [bin/ttisctl, bin/ttisd]   KEEP=1 keeps the work folder
# Needs python3 (to read the JSON results) and GNU time (/usr/bin/time) for RSS.
set -euo pipefail

LLAMA_BIN=${1:-${LLAMA_BIN:-}}
if [[ -z "$LLAMA_BIN" || ! -x "$LLAMA_BIN/llama-bench" || ! -x "$LLAMA_BIN/llama-server" ]]; then
	echo "usage: $0 LLAMA_BIN_DIR (a folder with llama-bench and llama-server)" >&2
	exit 2
fi
TTISCTL=${TTISCTL:-bin/ttisctl}
TTISD=${TTISD:-bin/ttisd}
for b in "$TTISCTL" "$TTISD" /usr/bin/time python3; do
	command -v "$b" >/dev/null || { echo "$0: $b not found (make build; apt install time python3)" >&2; exit 2; }
done
MODELS=${MODELS-"24m:f32 24m:f16 24m:q8_0 134m:f32 134m:f16 134m:q8_0 134m:q4_k"}
SERVED_MODELS=${SERVED_MODELS-"24m:q8_0 134m:q8_0"}
THREADS=${THREADS:-2}
PP=${PP:-"128 512"}
PP_FIRST=${PP%% *}
PP_REST=${PP#"$PP_FIRST"}
REPS=${REPS:-3}
CONCURRENCY=${CONCURRENCY:-"1 2 4 8 16"}
PROMPTS=${PROMPTS:-16}
ISL=${ISL:-128}
OSL=${OSL:-128}

WORK=$(mktemp -d)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [[ -z "${KEEP:-}" ]]; then rm -rf "$WORK"; else echo "work folder: $WORK" >&2; fi
}
trap cleanup EXIT
RESULTS=$WORK/results.tsv # engine, model, test, value
: >"$RESULTS"

model_file() { # preset:type -> path, created once
	local f=$WORK/${1/:/-}.gguf
	[[ -f $f ]] || "$TTISCTL" model create --preset "${1%%:*}" --type "${1##*:}" "$f" >&2
	echo "$f"
}

# rss CMD...: runs CMD, its stdout to $WORK/out, and prints its peak RSS in KiB.
rss() {
	/usr/bin/time -f %M -o "$WORK/rss" "$@" >"$WORK/out" 2>"$WORK/err" || { cat "$WORK/err" >&2; return 1; }
	cat "$WORK/rss"
}

raw_ttis() { # model spec, file
	local kib p
	kib=$(rss "$TTISCTL" -o json model bench -t "$THREADS" -p "$PP_FIRST" -n 128 --batch 1 -r 1 "$2")
	ttis_rows "$1"
	for p in $PP_REST; do
		rss "$TTISCTL" -o json model bench -t "$THREADS" -p "$p" -n 0 -r 1 "$2" >/dev/null
		ttis_rows "$1"
	done
	printf 'ttis\t%s\trss_mib\t%s\n' "$1" "$(awk '{print $1/1024}' <<<"$kib")" >>"$RESULTS"
}

ttis_rows() { # model spec (rows from $WORK/out)
	python3 - "$1" "$WORK/out" >>"$RESULTS" <<'EOF'
import json, sys
spec, path = sys.argv[1], sys.argv[2]
for r in json.load(open(path)):
    print(f"ttis\t{spec}\t{r['test']}\t{r['tokens_per_second']}")
EOF
}

raw_llama() {
	local kib p
	kib=$(rss "$LLAMA_BIN/llama-bench" -m "$2" -t "$THREADS" -p "$PP_FIRST" -n 128 -r 1 -o json)
	llama_rows "$1"
	for p in $PP_REST; do
		rss "$LLAMA_BIN/llama-bench" -m "$2" -t "$THREADS" -p "$p" -n 0 -r 1 -o json >/dev/null
		llama_rows "$1"
	done
	printf 'llama\t%s\trss_mib\t%s\n' "$1" "$(awk '{print $1/1024}' <<<"$kib")" >>"$RESULTS"
}

llama_rows() { # model spec (rows from $WORK/out)
	python3 - "$1" "$WORK/out" >>"$RESULTS" <<'EOF'
import json, sys
spec, path = sys.argv[1], sys.argv[2]
for r in json.load(open(path)):
    test = f"pp{r['n_prompt']}" if r["n_prompt"] else f"tg{r['n_gen']}"
    print(f"llama\t{spec}\t{test}\t{r['avg_ts']}")
EOF
}

# smaps_kinds PID MODEL_FILE: "total program model anonymous" resident KiB
# of process PID now.
smaps_kinds() {
	awk -v m="$2" '
		/^[0-9a-f]+-[0-9a-f]+ / { name = $6 }
		/^Rss:/ { if (name == m) model += $2; else if (name ~ /^\//) prog += $2; else anon += $2 }
		END { printf "%d %d %d %d", prog + model + anon, prog, model, anon }' "/proc/$1/smaps" 2>/dev/null
}

# record_kinds ENGINE SPEC LABEL "total program model anonymous": three rows.
record_kinds() {
	local prog model anon
	read -r _ prog model anon <<<"$4"
	printf '%s\t%s\t%s program mib\t%s\n' "$1" "$2" "$3" "$(awk -v k="$prog" 'BEGIN{print k/1024}')" >>"$RESULTS"
	printf '%s\t%s\t%s model file mib\t%s\n' "$1" "$2" "$3" "$(awk -v k="$model" 'BEGIN{print k/1024}')" >>"$RESULTS"
	printf '%s\t%s\t%s anonymous mib\t%s\n' "$1" "$2" "$3" "$(awk -v k="$anon" 'BEGIN{print k/1024}')" >>"$RESULTS"
}

# rss_kinds ENGINE SPEC MODEL_FILE CMD...: runs CMD once more, untimed,
# reading /proc/PID/smaps every 50 ms, and records the resident memory by
# kind at the sample with the largest total: the program (its executable
# and shared libraries), the model file's mapped pages, and anonymous
# memory (heap, stacks, caches). Peak RSS alone does not say which of these
# differs between two engines; a sample can miss the exact peak.
rss_kinds() {
	local engine=$1 spec=$2 model best=0 best_kinds="0 0 0 0" kinds total
	model=$(realpath "$3")
	shift 3
	"$@" >/dev/null 2>&1 &
	local pid=$!
	PIDS+=("$pid")
	for _ in $(seq 12000); do # 10 minutes at most
		kinds=$(smaps_kinds "$pid" "$model") || break
		total=${kinds%% *}
		if ((total > best)); then best=$total; best_kinds=$kinds; fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	wait "$pid" || true
	record_kinds "$engine" "$spec" "rss peak~" "$best_kinds"
}

for spec in $MODELS; do
	f=$(model_file "$spec")
	for rep in $(seq "$REPS"); do
		echo "raw $spec rep $rep/$REPS" >&2
		if ((rep % 2)); then raw_ttis "$spec" "$f"; raw_llama "$spec" "$f"
		else raw_llama "$spec" "$f"; raw_ttis "$spec" "$f"; fi
	done
	echo "raw $spec resident memory by kind" >&2
	rss_kinds ttis "$spec" "$f" "$TTISCTL" -o json model bench -t "$THREADS" -p "$PP_FIRST" -n 128 --batch 1 -r 1 "$f"
	rss_kinds llama "$spec" "$f" "$LLAMA_BIN/llama-bench" -m "$f" -t "$THREADS" -p "$PP_FIRST" -n 128 -r 1 -o json
done

wait_health() { # url, pid
	for _ in $(seq 600); do
		kill -0 "$2" 2>/dev/null || { echo "$0: server $1 exited" >&2; return 1; }
		curl -sf "$1/health" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "$0: $1 not healthy after 60 s" >&2
	return 1
}

served() { # engine, spec, url, concurrency (a number, then an optional label for the table)
	"$TTISCTL" bench --url "$3" --name "$1" --state-dir "$WORK/state" --no-progress -o json \
		--max-concurrency "${4%% *}" --num-prompts "$PROMPTS" --isl "$ISL" --osl "$OSL" >"$WORK/out" 2>"$WORK/err" ||
		{ cat "$WORK/err" >&2; return 1; }
	python3 - "$1" "$2" "$4" "$WORK/out" >>"$RESULTS" <<'EOF'
import json, sys
engine, spec, c, path = sys.argv[1:5]
r = json.load(open(path))
print(f"{engine}\t{spec}\tc={c} tok/s\t{r['output_throughput']}")
print(f"{engine}\t{spec}\tc={c} failed\t{r.get('failed', 0)}")
print(f"{engine}\t{spec}\tc={c} retried\t{r.get('stale_connection_retries', 0)}")
# A server that reports its own per-request timings (llama-server) is held
# against the client's measurement: client TPOT / server time per token.
a = r.get("server_timings_agreement")
if a and a.get("median_tpot_ratio") is not None:
    print(f"{engine}\t{spec}\tc={c} tpot client/server\t{a['median_tpot_ratio']}")
EOF
}

peak_rss() { awk '/VmHWM/ {print $2/1024}' "/proc/$1/status"; }

port=18400
for spec in $SERVED_MODELS; do
	f=$(model_file "$spec")
	ctx=$((ISL + OSL + 64))
	cat >"$WORK/unit.toml" <<EOF
model   = "$f"
device  = "cpu"
runtime = "cpu"
listen  = "127.0.0.1:$port"

[cpu]
threads = $THREADS

[limits]
max_concurrency = 16
max_context = $ctx
EOF
	"$TTISD" serve --model-dir "$WORK" "$WORK/unit.toml" >"$WORK/ttisd.log" 2>&1 &
	ttis_pid=$!
	PIDS+=("$ttis_pid")
	"$LLAMA_BIN/llama-server" -m "$f" -t "$THREADS" -np 16 -c $((16 * ctx)) --host 127.0.0.1 --port $((port + 1)) >"$WORK/llama-server.log" 2>&1 &
	llama_pid=$!
	PIDS+=("$llama_pid")
	wait_health "http://127.0.0.1:$port" "$ttis_pid"
	wait_health "http://127.0.0.1:$((port + 1))" "$llama_pid"
	for rep in $(seq "$REPS"); do
		for c in $CONCURRENCY; do
			echo "served $spec c=$c rep $rep/$REPS" >&2
			if ((rep % 2)); then
				served ttis "$spec" "http://127.0.0.1:$port" "$c"
				served llama "$spec" "http://127.0.0.1:$((port + 1))" "$c"
			else
				served llama "$spec" "http://127.0.0.1:$((port + 1))" "$c"
				served ttis "$spec" "http://127.0.0.1:$port" "$c"
			fi
		done
	done
	printf 'ttis\t%s\tserved rss_mib\t%s\n' "$spec" "$(peak_rss "$ttis_pid")" >>"$RESULTS"
	printf 'llama\t%s\tserved rss_mib\t%s\n' "$spec" "$(peak_rss "$llama_pid")" >>"$RESULTS"
	record_kinds ttis "$spec" "served rss end" "$(smaps_kinds "$ttis_pid" "$(realpath "$f")")"
	record_kinds llama "$spec" "served rss end" "$(smaps_kinds "$llama_pid" "$(realpath "$f")")"
	kill "$ttis_pid" "$llama_pid"
	wait "$ttis_pid" "$llama_pid" 2>/dev/null || true
	# llama-server's KV cache is one pool for all its slots, and a token
	# attends over every cell any slot still holds: with -np 16, a lone
	# request pays for fifteen idle slots' cached prompts. The fair single-
	# stream figure is llama-server with one slot, run here beside ttis's
	# (whose slots each have their own cache) as its own row.
	"$LLAMA_BIN/llama-server" -m "$f" -t "$THREADS" -np 1 -c "$ctx" --host 127.0.0.1 --port $((port + 1)) >"$WORK/llama-server-np1.log" 2>&1 &
	llama_pid=$!
	PIDS+=("$llama_pid")
	wait_health "http://127.0.0.1:$((port + 1))" "$llama_pid"
	for rep in $(seq "$REPS"); do
		echo "served $spec c=1 llama-server -np 1 rep $rep/$REPS" >&2
		served llama "$spec" "http://127.0.0.1:$((port + 1))" "1 (llama -np 1)"
	done
	kill "$llama_pid"
	wait "$llama_pid" 2>/dev/null || true
	port=$((port + 2))
done

python3 - "$RESULTS" "$THREADS" "$REPS" <<'EOF'
import statistics, sys
from collections import defaultdict
path, threads, reps = sys.argv[1:4]
vals = defaultdict(list)
order = []
for line in open(path):
    engine, spec, test, v = line.rstrip("\n").split("\t")
    if (spec, test) not in order:
        order.append((spec, test))
    vals[(engine, spec, test)].append(float(v))
print(f"\nttis cpu runtime vs llama.cpp: {threads} threads, medians of {reps} interleaved repetitions (ratio = ttis / llama.cpp)\n")
print(f"| {'model':<12} | {'test':<30} | {'ttis':>10} | {'llama.cpp':>10} | {'ratio':>6} |")
print(f"|{'-'*14}|{'-'*32}|{'-'*12}|{'-'*12}|{'-'*8}|")
for spec, test in order:
    a, b = vals.get(("ttis", spec, test)), vals.get(("llama", spec, test))
    if not a and "(llama -np 1)" in test:
        a = vals.get(("ttis", spec, test.replace(" (llama -np 1)", "")))
    if not a or not b:
        continue
    if test.endswith(("failed", "retried")):
        print(f"| {spec:<12} | {test:<30} | {sum(a):>10.0f} | {sum(b):>10.0f} | {'sum':>6} |")
        continue
    ma, mb = statistics.median(a), statistics.median(b)
    ratio = f"{ma / mb:.2f}" if mb else "-"
    print(f"| {spec:<12} | {test:<30} | {ma:>10.1f} | {mb:>10.1f} | {ratio:>6} |")
agree = [(spec, test) for spec, test in order if test.endswith("client/server") and ("llama", spec, test) in vals]
if agree:
    print("\nllama-server's own timings against the client's (median client TPOT / server time per token; 1.00 = agreement)\n")
    for spec, test in agree:
        print(f"| {spec:<12} | {test:<30} | {statistics.median(vals[('llama', spec, test)]):>6.3f} |")
EOF
