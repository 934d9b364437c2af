#!/usr/bin/env bash
# The main job on the embedded default, on any machine: no network, no
# accelerator, no root. Creates a small random-weight Llama model, starts
# ttisd on a private folder with a cpu unit (our Go engine serving that
# model), a sim unit (a simulated n150 serving Llama-3.1-8B-Instruct) and
# a sim media unit (a simulated n150 serving Stable Diffusion XL through
# tt-media-server's API), waits until they are active, shows `ttisctl
# status`, generates one image from the media unit, runs the release
# workflow (smoke eval, smoke benchmark sweep, report with a verdict) on
# each, prints where the results are, and stops the daemon. Nothing reaches
# the network: the releases run --offline, so eval data comes from the Hub
# cache or is reported as not measured, with the command that pulls it.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${BIN:-$root/bin}
demo=${DEMO_DIR:-$root/.demo}
ttisctl() { "$bin/ttisctl" --socket "$demo/ttisd.sock" "$@"; }

# free_port prints a loopback TCP port nobody listens on.
free_port() {
	local p
	for p in $(seq "$1" $(($1 + 200))); do
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	echo "no free port near $1" >&2
	exit 1
}

rm -rf "$demo"
# Models live in the state folder's models/, one of the folders ttisd lets
# units load model files from (model_dirs).
mkdir -p "$demo/units" "$demo/state/models"

echo "== creating a 24M-parameter Llama model (random weights, Q8_0)"
"$bin/ttisctl" model create --preset 24m --type q8_0 --seed 7 "$demo/state/models/demo-24m.gguf"

cpu_port=$(free_port 18600)
sim_port=$(free_port $((cpu_port + 1)))
sdxl_port=$(free_port $((sim_port + 1)))
cat >"$demo/units/demo-cpu.toml" <<UNIT
description = "24M random-weight Llama on the host CPU (pure-Go engine)"
model   = "$demo/state/models/demo-24m.gguf"
device  = "cpu"
runtime = "cpu"
listen  = "127.0.0.1:$cpu_port"

[limits]
max_concurrency = 4
UNIT
cat >"$demo/units/demo-sim.toml" <<UNIT
description = "simulated n150 serving Llama 3.1 8B (timing from the catalog targets)"
model   = "Llama-3.1-8B-Instruct"
device  = "n150"
runtime = "sim"
listen  = "127.0.0.1:$sim_port"
UNIT

cat >"$demo/units/demo-sdxl.toml" <<UNIT
description = "simulated n150 serving Stable Diffusion XL (a media unit: tt-media-server's image API)"
model   = "stable-diffusion-xl-base-1.0"
device  = "n150"
runtime = "sim"
listen  = "127.0.0.1:$sdxl_port"

[sim]
# 12.5 s an image on an n150 (the catalog target), shown 20 times faster.
time_scale = 0.05
UNIT

echo "== starting ttisd (log: $demo/ttisd.log)"
"$bin/ttisd" --units-dir "$demo/units" --state-dir "$demo/state" --socket "$demo/ttisd.sock" \
	--log-format text >"$demo/ttisd.log" 2>&1 &
daemon=$!
cleanup() {
	if kill -0 "$daemon" 2>/dev/null; then
		kill -TERM "$daemon"
		wait "$daemon" || true
	fi
}
trap cleanup EXIT

# Wait (bounded) until the units report active.
for _ in $(seq 1 120); do
	if ttisctl status demo-cpu >/dev/null 2>&1 && ttisctl status demo-sim >/dev/null 2>&1 && ttisctl status demo-sdxl >/dev/null 2>&1; then
		break
	fi
	sleep 0.5
done
ttisctl status
ttisctl status demo-cpu >/dev/null && ttisctl status demo-sim >/dev/null && ttisctl status demo-sdxl >/dev/null || {
	echo "units did not become active; see $demo/ttisd.log" >&2
	exit 1
}

echo
echo "== one image from the media unit (simulated: a seeded picture, timed like SDXL on an n150)"
curl -sS --max-time 60 -H 'Content-Type: application/json' "http://127.0.0.1:$sdxl_port/v1/images/generations" \
	-d '{"prompt": "a lighthouse at dusk", "seed": 7, "size": "512x512"}' |
	grep -o '"images":\["[^"]*' | cut -d'"' -f4 | base64 -d >"$demo/sdxl.png"
echo "   $demo/sdxl.png ($(wc -c <"$demo/sdxl.png") bytes)"

echo
echo "== release workflow (evals, then the smoke benchmark sweep, then the report) for each unit"
# Verdicts are claims about the model, not failures of the demo:
#   PASS        everything the model's catalog status enforces was measured and met
#   FAIL        (exit 3) an enforced check was measured and missed
#   INCOMPLETE  (exit 5) something required was not measured: here the sim
#               unit's eval references need datasets the demo does not download
#               (--offline: the run reads only the Hub cache, and names the
#               `ttisctl dataset pull` command that fills it), and the media
#               unit's eval (load_image) is not implemented yet; its benchmark
#               point (seconds per image, images/s) is graded
#   UNGRADED    nothing to grade against: the cpu unit's random-weight model is
#               not in the catalog, so only functional checks run
for unit in demo-cpu demo-sim demo-sdxl; do
	rc=0
	ttisctl release --offline --limit smoke "$unit" || rc=$?
	case $rc in
	0 | 3 | 5) ;;
	*)
		echo "release of $unit could not run (exit $rc); see $demo/ttisd.log" >&2
		exit 1
		;;
	esac
	echo
done
echo
ttisctl runs
echo
echo "== done. Results store: $demo/state/runs"
find "$demo/state/runs" -name 'report.*' | sort | sed 's/^/   /'
