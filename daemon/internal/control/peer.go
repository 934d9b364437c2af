package control

import (
	"context"
	"net"

	"golang.org/x/sys/unix"
)

type peerKey struct{}

// peerContext records the credentials of the process at the other end of a
// unix socket connection (SO_PEERCRED), for the audit log of mutating
// requests.
func peerContext(ctx context.Context, c net.Conn) context.Context {
	if w, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = w.NetConn() // a Listener's counted connection
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return ctx
	}
	var cred *unix.Ucred
	_ = raw.Control(func(fd uintptr) {
		cred, _ = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if cred == nil {
		return ctx
	}
	return context.WithValue(ctx, peerKey{}, cred)
}

// peerAttrs returns uid and pid of the requesting process as log
// attributes, or nothing when unknown.
func peerAttrs(ctx context.Context) []any {
	cred, ok := ctx.Value(peerKey{}).(*unix.Ucred)
	if !ok {
		return nil
	}
	return []any{"peer_uid", cred.Uid, "peer_pid", cred.Pid}
}
