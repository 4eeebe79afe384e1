//go:build linux && handles

package handles_test

// The Go stress helper: this test binary run with HANDLES_HELPER set, using
// the Go API (host.OpenHandles). testdata/handles_helper.py and
// testdata/handles_helper.mjs are the same helper for the Python and
// TypeScript APIs; all three speak one protocol:
//
// Environment: HANDLES_ROOT (state root), HANDLES_APP, HANDLES_HANDLE (an
// existing handle, principal ""), HANDLES_THREADS, HANDLES_OPS, HANDLES_SEED.
//
//   - cas: print "ready", wait for a line on stdin, then HANDLES_THREADS
//     threads each make HANDLES_OPS successful compare-and-set increments
//     of the value {"count": N} (get, then put count+1 expecting the
//     generation read; on conflict read again), checking on every read that
//     count = generation - 1, that a put returns the generation expected + 1
//     and that a conflict names a newer generation. Then print one JSON line
//     {"puts", "conflicts", "errors": [at most 10 strings], "failed"}.
//   - putloop: forever get the value and put the next one, expecting the
//     generation read; print "ready" after the first put. Values are
//     crashValue(generation, seed, i): self-checking, 0-64 KiB.
//   - principals: print one JSON line, the list of codes ("ok" for
//     success) of: create with a 1025-byte principal; create with a
//     principal that is not valid UTF-8 (the language's nearest: bytes
//     \xff\xfe in Go, a lone surrogate in Python and TypeScript); get of
//     HANDLES_HANDLE with a 1025-byte principal; create with a 1024-byte
//     principal; get of HANDLES_HANDLE with "".

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/mcp-resume/mcp-resume/host"
)

// casReport is a cas helper's last line.
type casReport struct {
	Puts      int      `json:"puts"`
	Conflicts int      `json:"conflicts"`
	Errors    []string `json:"errors"`
	// Failed counts every error, of which Errors keeps the first 10.
	Failed int `json:"failed"`
}

// casValue is the value the cas helpers increment.
type casValue struct {
	Count int64 `json:"count"`
}

// crashVal is the value the putloop helpers write: the generation it is
// written at, the writer's seed, a filler and a check of the three.
type crashVal struct {
	Gen  int64  `json:"gen"`
	Seed int64  `json:"seed"`
	Pad  string `json:"pad"`
	Sum  string `json:"sum"`
}

// crashValue is the putloop value for generation gen, writer seed, i-th put:
// a filler of (seed*131 + i*977) mod 65536 letters and, in sum, the first 16
// hex digits of SHA-256("<gen>:<seed>:<pad>").
func crashValue(gen, seed, i int64) []byte {
	n := (seed*131 + i*977) % 65536
	var pad strings.Builder
	for j := int64(0); j < n; j++ {
		pad.WriteByte(byte('a' + (gen+j)%26))
	}
	v := crashVal{Gen: gen, Seed: seed, Pad: pad.String()}
	v.Sum = crashSum(v)
	b, _ := json.Marshal(v)
	return b
}

func crashSum(v crashVal) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%d:%d:%s", v.Gen, v.Seed, v.Pad)))
	return hex.EncodeToString(h[:8])
}

// checkCrashValue returns "" when data is a whole putloop value written at
// generation gen, else what is wrong with it.
func checkCrashValue(data []byte, gen int64) string {
	var v crashVal
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Sprintf("not a whole value (%d bytes): %v", len(data), err)
	}
	if v.Sum != crashSum(v) {
		return "its check does not match"
	}
	if v.Gen != gen {
		return fmt.Sprintf("it was written at generation %d but reads back at %d", v.Gen, gen)
	}
	return ""
}

func envInt(name string) int64 {
	n, _ := strconv.ParseInt(os.Getenv(name), 10, 64)
	return n
}

// runHelper runs mode and returns the exit status.
func runHelper(mode string) int {
	ctx := context.Background()
	store, err := host.OpenHandles(context.Background(), os.Getenv("HANDLES_APP"), &host.HandleOptions{StateRoot: os.Getenv("HANDLES_ROOT")})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 1
	}
	defer store.Close(context.Background())
	handle := os.Getenv("HANDLES_HANDLE")
	switch mode {
	case "cas":
		fmt.Println("ready")
		bufio.NewReader(os.Stdin).ReadString('\n')
		var mu sync.Mutex
		var rep casReport
		fail := func(format string, a ...any) {
			mu.Lock()
			defer mu.Unlock()
			rep.Failed++
			if len(rep.Errors) < 10 {
				rep.Errors = append(rep.Errors, fmt.Sprintf(format, a...))
			}
		}
		ops := envInt("HANDLES_OPS")
		var wg sync.WaitGroup
		for range envInt("HANDLES_THREADS") {
			wg.Go(func() {
				for done, tries := int64(0), 0; done < ops && tries < int(ops)*200; tries++ {
					v, err := store.Get(ctx, handle, "")
					if err != nil {
						fail("get: %v", err)
						continue
					}
					var c casValue
					if err := json.Unmarshal(v.Data, &c); err != nil || c.Count != v.Generation-1 {
						fail("read count %d at generation %d (%v)", c.Count, v.Generation, err)
						continue
					}
					next, _ := json.Marshal(casValue{Count: c.Count + 1})
					gen, err := store.Put(ctx, handle, "", next, host.IfGeneration(v.Generation))
					var he *host.Error
					switch {
					case err == nil && gen == v.Generation+1:
						done++
						mu.Lock()
						rep.Puts++
						mu.Unlock()
					case err == nil:
						fail("put expecting %d returned generation %d", v.Generation, gen)
					case errors.As(err, &he) && errors.Is(err, host.ErrConflict):
						if he.Generation <= v.Generation {
							fail("conflict expecting %d named generation %d", v.Generation, he.Generation)
						}
						mu.Lock()
						rep.Conflicts++
						mu.Unlock()
					default:
						fail("put: %v", err)
					}
				}
			})
		}
		wg.Wait()
		json.NewEncoder(os.Stdout).Encode(rep)
		return 0
	case "principals":
		code := func(err error) string {
			var he *host.Error
			switch {
			case err == nil:
				return "ok"
			case errors.As(err, &he):
				return he.Code
			}
			return "error: " + err.Error()
		}
		long := strings.Repeat("p", 1025)
		_, e1 := store.Create(ctx, long, []byte("{}"))
		_, e2 := store.Create(ctx, "\xff\xfe", []byte("{}"))
		_, e3 := store.Get(ctx, handle, long)
		_, e4 := store.Create(ctx, long[:1024], []byte("{}"))
		_, e5 := store.Get(ctx, handle, "")
		json.NewEncoder(os.Stdout).Encode([]string{code(e1), code(e2), code(e3), code(e4), code(e5)})
		return 0
	case "putloop":
		seed := envInt("HANDLES_SEED")
		for i := int64(0); ; i++ {
			v, err := store.Get(ctx, handle, "")
			if err != nil {
				fmt.Fprintln(os.Stderr, "get:", err)
				return 1
			}
			if _, err := store.Put(ctx, handle, "", crashValue(v.Generation+1, seed, i), host.IfGeneration(v.Generation)); err != nil {
				fmt.Fprintln(os.Stderr, "put:", err)
				return 1
			}
			if i == 0 {
				fmt.Println("ready")
			}
		}
	}
	fmt.Fprintln(os.Stderr, "unknown HANDLES_HELPER mode", mode)
	return 2
}
