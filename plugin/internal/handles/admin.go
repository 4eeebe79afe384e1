package handles

// The whole-store operations: list and gc, and the sweeps of open
// (hostfuncs/README.md, "Plugin exports", handle_list and handle_gc). Only
// these list the directory; per-handle operations never do.

import (
	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/plugin/internal/resume"
)

// sweepTemps removes the temporary files of writers that died between
// creating and renaming them (resume.StaleTemp), and returns how many it
// removed.
func (s *Store) sweepTemps(files []hostfuncs.ListEntry) int64 {
	n := int64(0)
	for _, f := range files {
		if resume.StaleTemp(f) && s.remove(f.Name) == nil {
			n++
		}
	}
	return n
}

// sweepShard sweeps shard n at now if its lock is free at once (open's
// sweep: a busy shard is swept by its holder or a later open).
func (s *Store) sweepShard(n int, now int64) {
	lock := lockPrefix + s.shardName(n)
	if s.tryLock(lock, 0) != nil {
		return
	}
	defer s.unlock(lock)
	var c gcCounts
	_ = s.inShard(n, now, func(sh *shard) *hostfuncs.Error { sh.sweep(&c); return nil })
}

// List is the handle_list export: input {"now_ms"?}. It answers every
// entry of every shard as the clock of the call sees it (a live entry past
// a deadline shows as expired; tombstones past their period are left out),
// with counts, the shard count in effect and the bytes of live values;
// never a value, a handle or a principal. It changes nothing but a
// rebuilt index. Errors: store_unavailable, invalid_option, not_open.
func (s *Store) List(input []byte) (hostfuncs.HandleListOutput, *hostfuncs.Error) {
	if s.rd != nil {
		r, werr := s.parse(input, false, false, true)
		if werr != nil {
			return hostfuncs.HandleListOutput{}, werr
		}
		return s.redisList(r)
	}
	r, werr := s.wholeStore(input)
	if werr != nil {
		return hostfuncs.HandleListOutput{}, werr
	}
	files, err := s.listDir()
	if err != nil {
		return hostfuncs.HandleListOutput{}, s.unavailable("cannot list " + s.set.StateDir + ": " + err.Error())
	}
	used := s.used(files)
	out := hostfuncs.HandleListOutput{Handles: []hostfuncs.HandleEntry{}, Shards: int64(s.shards)}
	for n := 0; n < s.shards; n++ {
		if !used[n] {
			continue
		}
		werr := s.withShard(n, r.now, s.set.LockWaitMS, func(sh *shard) *hostfuncs.Error {
			for i := range sh.entries {
				e := sh.entries[i]
				state := e.State
				if state == stateLive {
					if st, died, ok := lapsed(&e, r.now); ok {
						state, e.LastUsedMS = st, died
					}
				}
				if state != stateLive && sh.buried(&e) {
					continue
				}
				he := hostfuncs.HandleEntry{Key: shortKey(e.Hash), State: stateNames[state], AgeMS: max(r.now-e.CreatedMS, 0), IdleMS: max(r.now-e.LastUsedMS, 0)}
				if state == stateLive {
					he.Generation, he.Size = e.Generation, e.Size
					out.Live++
					out.Bytes += e.Size
				} else {
					out.Tombstones++
				}
				out.Handles = append(out.Handles, he)
			}
			return nil
		})
		if werr != nil {
			return hostfuncs.HandleListOutput{}, werr
		}
	}
	return out, nil
}

// wholeStore reads the input of list or gc ({"now_ms"?}, or nothing) and
// prepares the directory without open's sweep (gc sweeps and counts
// itself).
func (s *Store) wholeStore(input []byte) (*request, *hostfuncs.Error) {
	r, werr := s.parse(input, false, false, true)
	if werr != nil {
		return nil, werr
	}
	return r, s.begin(r.now, false)
}

// used marks the shards that the listing files shows an index or a
// record of: list and gc visit only those (a shard with neither has
// nothing to answer or collect), so that their cost follows the shards in
// use, not the shard count (up to 4096).
func (s *Store) used(files []hostfuncs.ListEntry) []bool {
	used := make([]bool, s.shards)
	for _, f := range files {
		if h, ok := parseRecordName(f.Name); ok {
			used[s.shardOf(h)] = true
		} else if n, ok := s.parseShardName(f.Name); ok {
			used[n] = true
		}
	}
	return used
}

// stateNames are the list names of the entry states.
var stateNames = [...]string{hostfuncs.HandleLive, hostfuncs.HandleExpiredIdle, hostfuncs.HandleExpiredMaxAge, hostfuncs.HandleEvicted}

// GC is the handle_gc export: input {"now_ms"?}. Under each shard's lock
// it expires lapsed handles, drops tombstones past their period and
// removes orphan records (a record without an index entry: a writer killed
// between writing it and its index); it removes stale temporary files.
// It answers the counts and the live handles left. Errors:
// store_unavailable, invalid_option, not_open.
func (s *Store) GC(input []byte) (hostfuncs.HandleGCOutput, *hostfuncs.Error) {
	if s.rd != nil {
		r, werr := s.parse(input, false, false, true)
		if werr != nil {
			return hostfuncs.HandleGCOutput{}, werr
		}
		return s.redisGC(r)
	}
	r, werr := s.wholeStore(input)
	if werr != nil {
		return hostfuncs.HandleGCOutput{}, werr
	}
	files, err := s.listDir()
	if err != nil {
		return hostfuncs.HandleGCOutput{}, s.unavailable("cannot list " + s.set.StateDir + ": " + err.Error())
	}
	var out hostfuncs.HandleGCOutput
	out.TempsRemoved = s.sweepTemps(files)
	records := make([][][16]byte, s.shards)
	for _, f := range files {
		if h, ok := parseRecordName(f.Name); ok && f.Type == hostfuncs.StatFile {
			records[s.shardOf(h)] = append(records[s.shardOf(h)], h)
		}
	}
	used := s.used(files)
	for n := 0; n < s.shards; n++ {
		if !used[n] {
			continue
		}
		werr := s.withShard(n, r.now, s.set.LockWaitMS, func(sh *shard) *hostfuncs.Error {
			// Orphans first: a record without a live entry (its writer was
			// killed before the index write, or its removal failed).
			for _, h := range records[n] {
				if i := sh.find(h); (i < 0 || sh.entries[i].State != stateLive) && s.remove(recordName(h)) == nil {
					out.OrphansRemoved++
				}
			}
			var c gcCounts
			sh.sweep(&c)
			out.ExpiredIdle += c.expiredIdle
			out.ExpiredMaxAge += c.expiredMaxAge
			out.TombstonesDropped += c.dropped
			for i := range sh.entries {
				if sh.entries[i].State == stateLive {
					out.Live++
				}
			}
			return nil
		})
		if werr != nil {
			return hostfuncs.HandleGCOutput{}, werr
		}
	}
	return out, nil
}
