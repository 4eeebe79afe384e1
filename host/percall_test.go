package host_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/mcp-resume/mcp-resume/host"
)

// The per-instance kernel cache and the kept lock files change costs, not
// answers: a store running the way the host ran before (go-sdk's
// CurrentPlugin for plugin memory, every lock file opened again) and one
// running now answer the same sequence of operations the same, including
// large values (several kernel blocks) and errors.
func TestHandles_PerCallSavingsSameAnswers(t *testing.T) {
	ctx := context.Background()
	big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	for _, before := range []bool{true, false} {
		h := openHandles(t, "percall", host.HandleOptions{Pool: 1})
		c, err := h.Create(ctx, "p", []byte("v1"))
		if err != nil {
			t.Fatal(err)
		}
		if before {
			h.PayPerCallForTest()
		}
		for i, value := range [][]byte{[]byte("v2"), big, {}} {
			if _, err := h.Put(ctx, c.Handle, "p", value); err != nil {
				t.Fatalf("before=%v: put %d: %v", before, i, err)
			}
			if before {
				h.DropLockFilesForTest()
			}
			got, err := h.Get(ctx, c.Handle, "p")
			if err != nil || !bytes.Equal(got.Data, value) || got.Generation != int64(i+2) {
				t.Fatalf("before=%v: get %d = %d bytes, generation %d, %v; want %d bytes, generation %d", before, i, len(got.Data), got.Generation, err, len(value), i+2)
			}
		}
		if _, err := h.Get(ctx, c.Handle, "q"); !errors.Is(err, host.ErrHandleNotFound) {
			t.Errorf("before=%v: another principal's get = %v, want ErrHandleNotFound", before, err)
		}
		if err := h.Delete(ctx, c.Handle, "p"); err != nil {
			t.Fatalf("before=%v: delete: %v", before, err)
		}
		if _, err := h.Get(ctx, c.Handle, "p"); !errors.Is(err, host.ErrHandleNotFound) {
			t.Errorf("before=%v: get after delete = %v, want ErrHandleNotFound", before, err)
		}
	}
}
