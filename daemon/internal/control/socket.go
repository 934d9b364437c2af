package control

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"time"
)

// Listen creates the control socket at path with mode 0660 and group
// group. An existing socket that answers belongs to a running daemon and is
// an error; one that does not answer is stale and is replaced. A group that
// does not exist (or that the user may not use) is a warning: a normal user
// can still run ttisd with their own group.
func Listen(path, group string, log *slog.Logger) (net.Listener, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// A missing parent is created 0750 so the socket is never reachable by
	// others in the moment between listen and chmod.
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("control socket folder: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("control socket %s exists and is not a socket; refusing to remove it", path)
		}
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("control socket %s: another ttisd is running and answering there", path)
		}
		log.Info("removing stale control socket", "path", path)
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("remove stale control socket: %w", err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(path, 0o660); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket mode: %w", err)
	}
	if group != "" {
		if err := chgrp(path, group); err != nil {
			log.Warn("control socket keeps the user's group", "group", group, "err", err)
		}
	}
	return ln, nil
}

func chgrp(path, group string) error {
	g, err := user.LookupGroup(group)
	if err != nil {
		return err
	}
	gid, err := strconv.Atoi(g.Gid)
	if err != nil {
		return fmt.Errorf("group %s: gid %q: %w", group, g.Gid, err)
	}
	return os.Chown(path, -1, gid)
}
