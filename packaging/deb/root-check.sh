#!/usr/bin/env bash
# Installs a ttis .deb into a clean Debian root with dpkg -i, as an
# operator would, and checks the result there: the ttis user and group,
# the state folders, nothing enabled, `systemd-analyze verify` on the
# installed unit, `man ttisctl` renders. Needs root (chroot) and Debian's
# package mirror; the go test in packaging/deb does the same without a
# network by installing chrootless into an empty root.
#
#   packaging/deb/root-check.sh dist/ttis_<version>_<arch>.deb [SUITE]
set -euo pipefail

deb=$(realpath "$1")
suite=${2:-bookworm}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
command -v debootstrap >/dev/null || { echo "root-check: debootstrap is not installed (apt-get install debootstrap)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "root-check: needs root (chroot)" >&2; exit 2; }

root=$(mktemp -d /tmp/ttis-root.XXXXXX)
chmod 0755 "$root" # a root folder others may traverse (man-db drops to user man)
trap 'umount "$root/proc" 2>/dev/null || true; rm -rf "$root"' EXIT
echo "root-check: debootstrap $suite into $root"
debootstrap --variant=minbase --include=systemd,man-db,procps "$suite" "$root" "$mirror" >"$root.log" 2>&1 ||
	{ tail -20 "$root.log" >&2; exit 1; }
rm -f "$root.log"
cp "$deb" "$root/tmp/ttis.deb"
# systemd-tmpfiles (run by the postinst) needs /proc, as on a booted host.
mount -t proc proc "$root/proc"

in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }
in_root dpkg -i /tmp/ttis.deb
in_root id ttis
in_root test -d /var/lib/ttis -a -d /etc/ttis/units
if in_root systemctl --root=/ is-enabled ttisd.service >/dev/null 2>&1; then
	echo "root-check: the package enabled ttisd by itself" >&2
	exit 1
fi
in_root systemd-analyze verify /usr/lib/systemd/system/ttisd.service
in_root systemd-analyze security --offline=true /usr/lib/systemd/system/ttisd.service | tail -1
in_root man -P cat ttisctl | head -5
in_root man -P cat ttis.unit | grep -q 'TABLE \[\[schedule\]\]'
in_root dpkg -r ttis
echo "root-check: ok"
