package serve

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// peerProgress reports how many bytes of the connection's output the peer
// has acknowledged and whether anything is still waiting for it (sent and
// unacknowledged, or not yet sent). ok is false when the connection is not
// a TCP socket whose state can be read.
func peerProgress(c any) (acked uint64, pending bool, ok bool) {
	sc, isSys := c.(syscall.Conn)
	if !isSys {
		return 0, false, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, false, false
	}
	var info *unix.TCPInfo
	var ierr error
	if err := raw.Control(func(fd uintptr) {
		info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil || ierr != nil {
		return 0, false, false
	}
	return info.Bytes_acked, info.Unacked > 0 || info.Notsent_bytes > 0, true
}
