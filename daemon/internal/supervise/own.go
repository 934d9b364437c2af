package supervise

import (
	"errors"
	"syscall"
)

// ownErrnos are the errors by which the daemon, not the server, failed: it
// ran out of file descriptors (EMFILE for itself, ENFILE for the host),
// memory or socket buffers, local ports (EADDRNOTAVAIL), or processes
// (EAGAIN from fork, or from a connect with no port left).
var ownErrnos = []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOMEM, syscall.ENOBUFS, syscall.EADDRNOTAVAIL, syscall.EAGAIN}

// ownFailure reports whether err says the daemon could not act rather than
// that the server failed: a health probe that could not even open its
// socket, a start that could not open the output files. Such an error says
// nothing about the server, so the supervisor never counts it against the
// unit: no failed health check, no start against the start limit, no
// stall towards the ready timeout. A server that does not answer, refuses
// the connection or answers an error is the server's failure, as before.
func ownFailure(err error) bool {
	for _, e := range ownErrnos {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
