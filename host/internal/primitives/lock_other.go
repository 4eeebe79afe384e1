//go:build !linux

package primitives

import "syscall"

// bindAbstract answers ENOTSUP: abstract Unix sockets exist on Linux only
// (the lock never asks for one elsewhere).
func bindAbstract(name string) ([]int, error) { return nil, syscall.ENOTSUP }
