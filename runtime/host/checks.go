package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/ttis-dev/ttis/runtime/device"
)

const gib = 1 << 30

// Paths the checks read, under Env.Root.
const (
	meminfoPath   = "/proc/meminfo"
	hugepages1G   = "/sys/kernel/mm/hugepages/hugepages-1048576kB"
	hugepagesDir  = "/dev/hugepages-1G"
	kmdVersion    = "/sys/module/tenstorrent/version"
	devTenstorrnt = "/dev/tenstorrent"
)

// checkRAM compares MemAvailable with the catalog's min_ram_gb, as
// setup_host.py's check_ram does (lines 364-386).
func checkRAM(env Env, need Need) Check {
	c := Check{Name: "ram"}
	b, err := os.ReadFile(env.path(meminfoPath))
	if err != nil {
		c.Status, c.Detail = Fail, fmt.Sprintf("cannot read %s: %v", meminfoPath, err)
		c.Fix = "run on Linux with /proc mounted"
		return c
	}
	mem, err := ParseMeminfo(b)
	if err != nil {
		c.Status, c.Detail, c.Fix = Fail, fmt.Sprintf("%s: %v", meminfoPath, err), "check that /proc/meminfo is the kernel's"
		return c
	}
	avail, ok := mem["MemAvailable"]
	if !ok {
		c.Status, c.Detail, c.Fix = Fail, meminfoPath+" has no MemAvailable line", "use a kernel newer than 3.14"
		return c
	}
	availGB := float64(avail) / gib
	if need.Spec == nil || need.Spec.MinRAMGB == 0 {
		c.Status, c.Detail = Pass, fmt.Sprintf("%.1f GiB available (no catalog minimum)", availGB)
		return c
	}
	c.Detail = fmt.Sprintf("%.1f GiB available, the catalog asks %.1f GiB for %s", availGB, need.Spec.MinRAMGB, need.Spec.ModelName)
	if availGB >= need.Spec.MinRAMGB {
		c.Status = Pass
		return c
	}
	c.Status, c.Fix = Fail, "free memory (stop other servers) or use a host with more RAM"
	return c
}

// checkDisk compares the weights cache filesystem's free space with the
// catalog's min_disk_gb, as setup_host.py's check_disk_space does (lines
// 341-362); pre-downloaded weights need no space.
func checkDisk(env Env, need Need) Check {
	c := Check{Name: "disk"}
	if need.WeightsDir != "" {
		st, err := os.Stat(need.WeightsDir)
		switch {
		case err != nil:
			c.Status, c.Detail = Fail, fmt.Sprintf("weights folder %s: %v", need.WeightsDir, err)
			c.Fix = "pull the weights there (ttisctl model pull MODEL) or fix [vllm] weights_dir"
		case !st.IsDir():
			c.Status, c.Detail, c.Fix = Fail, need.WeightsDir+" is not a folder", "point [vllm] weights_dir at the weights folder"
		default:
			c.Status, c.Detail = Pass, "weights are pre-downloaded in "+need.WeightsDir+" (no download space needed)"
		}
		return c
	}
	if need.Spec == nil || need.Spec.MinDiskGB == 0 {
		c.Status, c.Detail = Skip, "no catalog disk minimum for this unit"
		return c
	}
	where := need.WeightsCache
	if where == "" {
		where = env.path(DefaultDockerRoot)
	}
	fs := existingParent(where)
	free, err := env.FreeBytes(fs)
	if err != nil {
		c.Status, c.Detail, c.Fix = Fail, fmt.Sprintf("free space of %s: %v", fs, err), "check the weights cache folder ([vllm] cache_dir)"
		return c
	}
	freeGB := free / gib
	c.Detail = fmt.Sprintf("%d GiB free on %s, the catalog asks %d GiB for %s", freeGB, fs, need.Spec.MinDiskGB, need.Spec.ModelName)
	if freeGB >= uint64(need.Spec.MinDiskGB) {
		c.Status = Pass
		return c
	}
	c.Status, c.Fix = Fail, "free space there, or set [vllm] cache_dir to a larger filesystem"
	return c
}

// checkHugepages wants one free 1 GiB hugepage per claimed chip and the
// hugetlbfs mount the container binds (run_docker_server.py line 338).
func checkHugepages(env Env, need Need) Check {
	c := Check{Name: "hugepages"}
	fix := "reserve 1 GiB hugepages and mount them at /dev/hugepages-1G (tt-system-tools' hugepages-setup.sh, or hugepagesz=1G hugepages=N on the kernel command line)"
	nr, err := readInt(env.path(hugepages1G + "/nr_hugepages"))
	if err != nil {
		c.Status, c.Detail, c.Fix = Fail, "no 1 GiB hugepages: "+err.Error(), fix
		return c
	}
	free, err := readInt(env.path(hugepages1G + "/free_hugepages"))
	if err != nil {
		free = nr
	}
	want := max(1, len(need.Chips))
	c.Detail = fmt.Sprintf("1 GiB hugepages: %d reserved, %d free; %d needed (one per chip)", nr, free, want)
	switch {
	case nr < want:
		c.Status, c.Fix = Fail, fix
	case free < want:
		c.Status, c.Fix = Fail, "free hugepages are held by another process: stop it, or reserve more"
	default:
		if st, err := os.Stat(env.path(hugepagesDir)); err != nil || !st.IsDir() {
			c.Status, c.Fix = Fail, fix
			c.Detail += "; " + hugepagesDir + " is not mounted"
			return c
		}
		c.Status = Pass
	}
	return c
}

// checkChips wants every claimed /dev/tenstorrent/N.
func checkChips(env Env, need Need) Check {
	c := Check{Name: "chips"}
	found, err := device.Discover(env.path(devTenstorrnt))
	if err != nil {
		c.Status, c.Detail, c.Fix = Fail, err.Error(), "check the tt-kmd driver (modprobe tenstorrent)"
		return c
	}
	have := make([]int, len(found))
	for i, ch := range found {
		have[i] = ch.ID
	}
	if len(need.Chips) == 0 {
		if len(have) == 0 {
			c.Status, c.Detail = Fail, "no Tenstorrent chips under "+devTenstorrnt
			c.Fix = "install tt-kmd and check the cards (lspci -d 1e52:)"
			return c
		}
		c.Status, c.Detail = Pass, fmt.Sprintf("chips %v under %s", have, devTenstorrnt)
		return c
	}
	var missing []int
	for _, id := range need.Chips {
		if !slices.Contains(have, id) {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		c.Status = Fail
		c.Detail = fmt.Sprintf("chips %v missing (present: %v)", missing, have)
		if len(have) == 0 {
			c.Detail = fmt.Sprintf("chips %v missing (no chips under %s)", missing, devTenstorrnt)
		}
		c.Fix = "install tt-kmd (modprobe tenstorrent) or list present chips in the unit's chips"
		if len(have) > 0 {
			c.Fix = "list present chips in the unit's chips, or reset the cards (tt-smi -r)"
		}
		return c
	}
	c.Status, c.Detail = Pass, fmt.Sprintf("chips %v present", need.Chips)
	return c
}

// checkTTSMI wants tt-smi, which resets chips and reports firmware.
func checkTTSMI(env Env, need Need, snapErr error) Check {
	c := Check{Name: "tt-smi"}
	fix := "pip install tt-smi (https://github.com/tenstorrent/tt-smi), then run tt-smi -s"
	switch {
	case snapErr == nil:
		c.Status, c.Detail = Pass, "tt-smi -s answers"
	case errors.Is(snapErr, errNoTTSMI):
		c.Status, c.Detail, c.Fix = Warn, "tt-smi is not installed: firmware versions cannot be read and chips cannot be reset", fix
		if need.ResetDevice {
			c.Status, c.Detail = Fail, "tt-smi is not installed and the unit resets chips (restart.reset_device)"
		}
	default:
		c.Status, c.Detail, c.Fix = Warn, snapErr.Error(), "reset the chips (tt-smi -r) and try again"
	}
	return c
}

// checkKMD compares the driver's version (sysfs, or tt-smi's host_info
// Driver as run_system_software_validation.py reads it, lines 174-178)
// with the catalog's kmd pin.
func checkKMD(env Env, need Need, snap *Snapshot) Check {
	c := Check{Name: "kmd"}
	fix := "install or upgrade tt-kmd (https://github.com/tenstorrent/tt-kmd) and reload it"
	v := ""
	if b, err := os.ReadFile(env.path(kmdVersion)); err == nil {
		v = strings.TrimSpace(string(b))
	} else if snap != nil {
		v = snap.KMDVersion()
	}
	req := ""
	if need.Spec != nil && need.Spec.SystemRequirements != nil {
		req = need.Spec.SystemRequirements.KMD
	}
	if v == "" {
		c.Status, c.Detail, c.Fix = Fail, "tt-kmd is not loaded ("+kmdVersion+" is missing)", fix
		return c
	}
	return versionCheck(c, "tt-kmd", v, req, fix)
}

// checkFirmware compares every chip's firmware bundle with the catalog's
// pin and wants them equal (run_system_software_validation.py lines
// 289-320).
func checkFirmware(need Need, snap *Snapshot, snapErr error) Check {
	c := Check{Name: "firmware"}
	fix := "flash the firmware bundle with tt-flash (https://github.com/tenstorrent/tt-flash), then reset"
	req := ""
	if need.Spec != nil && need.Spec.SystemRequirements != nil {
		req = need.Spec.SystemRequirements.Firmware
	}
	if snap == nil {
		c.Status, c.Detail = Warn, "firmware versions unknown (no tt-smi snapshot)"
		if snapErr != nil {
			c.Detail += ": " + snapErr.Error()
		}
		if req != "" {
			c.Detail += "; the catalog asks " + req
		}
		c.Fix = "install tt-smi so that ttis can read them"
		return c
	}
	versions := snap.FirmwareBundles()
	if len(need.Chips) > 0 {
		// tt-smi lists chips in /dev/tenstorrent order (line 292 there
		// picks device ids the same way).
		var picked []string
		for _, id := range need.Chips {
			if id < len(versions) {
				picked = append(picked, versions[id])
			}
		}
		versions = picked
	}
	if len(versions) == 0 {
		c.Status, c.Detail, c.Fix = Warn, "tt-smi reports no firmware bundle version", fix
		return c
	}
	uniq := slices.Compact(slices.Sorted(slices.Values(versions)))
	if len(uniq) != 1 {
		c.Status, c.Detail, c.Fix = Fail, fmt.Sprintf("firmware bundles differ among the chips: %v", versions), fix
		return c
	}
	return versionCheck(c, "firmware bundle", uniq[0], req, fix)
}

func versionCheck(c Check, what, v, req, fix string) Check {
	if req == "" {
		c.Status, c.Detail = Pass, what+" "+v+" (no catalog pin)"
		return c
	}
	ok, err := Satisfies(v, req)
	if err != nil {
		c.Status, c.Detail, c.Fix = Warn, fmt.Sprintf("%s %s against %s: %v", what, v, req, err), fix
		return c
	}
	c.Detail = fmt.Sprintf("%s %s, the catalog asks %s", what, v, req)
	if ok {
		c.Status = Pass
		return c
	}
	c.Status, c.Fix = Fail, fix
	return c
}

// checkDocker wants a docker daemon that answers, for container units.
func checkDocker(ctx context.Context, env Env, need Need) Check {
	c := Check{Name: "docker"}
	if !need.Docker {
		c.Status, c.Detail = Skip, "the unit runs no container"
		return c
	}
	if _, err := env.LookPath("docker"); err != nil {
		c.Status, c.Detail, c.Fix = Fail, "docker is not installed", "install Docker Engine (https://docs.docker.com/engine/install/)"
		return c
	}
	if err := env.Docker(ctx); err != nil {
		c.Status, c.Detail = Fail, "docker does not answer: "+err.Error()
		c.Fix = "start it (systemctl start docker) and let ttisd's user use it (usermod -aG docker USER)"
		return c
	}
	c.Status, c.Detail = Pass, "docker answers"
	return c
}

func readInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

// checkWeightsSource wants a container to have its weights: mounted from
// the host, or a Hugging Face token to download them with. run.py refuses
// a docker server without HF_TOKEN (run.py lines 847-857); a public model
// downloads without one, so this only warns.
func checkWeightsSource(need Need) Check {
	c := Check{Name: "weights"}
	switch {
	case !need.Docker || need.Spec == nil:
		c.Status, c.Detail = Skip, "no container unit to check"
	case need.WeightsDir != "":
		c.Status, c.Detail = Pass, "mounted read-only from "+need.WeightsDir
	case need.HFToken:
		c.Status, c.Detail = Pass, "downloaded in the container with the unit's Hugging Face token"
	default:
		c.Status = Warn
		c.Detail = "no [vllm] weights_dir and no [vllm] hf_token_file: gated weights (Llama, ...) cannot be downloaded"
		c.Fix = "pull them (ttisctl model pull MODEL) and set [vllm] weights_dir, or set [vllm] hf_token_file (a mode 0600 file)"
	}
	return c
}
