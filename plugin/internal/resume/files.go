package resume

import (
	"encoding/hex"
	"slices"
	"strings"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// This file holds the plugin's rules about the names in the state
// directory: which entries of the host's listing it acts on, how it names
// its temporary files and when it sweeps them (hostfuncs/README.md, "Names",
// mcp_resume_write and mcp_resume_list; plugin/README.md, "Files"). A host
// answers every entry and checks only that a name is one path element
// (hostfuncs.ValidName); the policy is here, once for every host.

// MaxNameLen is the longest name of a file the plugin makes or acts on, in
// bytes: 233, so that its temporary file ".<name>.<16 hex>.tmp" fits in the
// 255 bytes of the host rule (1 + 233 + 1 + 16 + 4). Token and lock names
// are at most 162 bytes (MaxStartTimeLen bounds the start time).
const MaxNameLen = hostfuncs.MaxNameLen - len(".") - len(".0123456789abcdef.tmp")

// SweepSeconds is how old, in seconds, one of the plugin's temporary files
// must be before the plugin removes it as left over: a writer killed between
// creating and renaming it holds one for microseconds, so 60 seconds spares
// every live writer.
const SweepSeconds = 60

// tempSuffix ends every temporary file name.
const tempSuffix = ".tmp"

// ValidFileName reports whether name obeys the plugin's naming policy for
// the files it makes and lists: 1–MaxNameLen bytes of [A-Za-z0-9._-], not
// starting with '.' (dot names are its temporary files).
func ValidFileName(name string) bool {
	if len(name) == 0 || len(name) > MaxNameLen || name[0] == '.' {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !isNameByte(name[i]) {
			return false
		}
	}
	return true
}

// TempName returns the temporary file name for writing name:
// ".<name>.<16 lowercase hex digits>.tmp", the digits from the guest's
// random source (WASI random_get in the plugin, crypto/rand natively), so
// that two writers never share one. At most 255 bytes for a name that
// passes ValidFileName.
func TempName(name string) string {
	var rnd [8]byte
	readRandom(rnd[:])
	return "." + name + "." + hex.EncodeToString(rnd[:]) + tempSuffix
}

// StaleTemp reports whether listed entry e is a temporary file a writer
// left behind: a regular file named like TempName and older than
// SweepSeconds. Both stores sweep these.
func StaleTemp(e hostfuncs.ListEntry) bool {
	return e.Type == hostfuncs.StatFile && e.AgeSeconds > SweepSeconds && IsTempName(e.Name)
}

// IsTempName reports whether name has the form of TempName: what the sweep
// may remove. Any other dot name (a user's note, another program's file) is
// never touched.
func IsTempName(name string) bool {
	rest, ok := strings.CutPrefix(name, ".")
	if !ok {
		return false
	}
	rest, ok = strings.CutSuffix(rest, tempSuffix)
	if !ok || len(rest) < 18 || rest[len(rest)-17] != '.' {
		return false
	}
	hex16 := rest[len(rest)-16:]
	for i := 0; i < len(hex16); i++ {
		if !(hex16[i] >= '0' && hex16[i] <= '9' || hex16[i] >= 'a' && hex16[i] <= 'f') {
			return false
		}
	}
	return ValidFileName(rest[:len(rest)-17])
}

// write replaces file name with data through mcp_resume_write, naming the
// temporary file (TempName). The host creates it exclusively, writes,
// renames; on failure it removes it.
func (s *Store) write(name string, data []byte) error {
	var w hostfuncs.Empty
	return s.invoke(hostfuncs.FnWrite, hostfuncs.WriteRequest{Name: name, Temp: TempName(name), Data: data}, &w, &w.Error)
}

// entries lists the state directory (mcp_resume_list: every entry, with its
// type and age, in any order). The first listing after the directory was
// judged also sweeps: every regular file named like TempName and older than
// SweepSeconds is removed (mcp_resume_remove, failures ignored: another
// server may sweep it first) and left out of the answer. The error is the
// host's.
func (s *Store) entries() ([]hostfuncs.ListEntry, error) {
	var r hostfuncs.ListResponse
	if err := s.invoke(hostfuncs.FnList, hostfuncs.ListRequest{}, &r, &r.Error); err != nil {
		return nil, err
	}
	if s.swept {
		return r.Files, nil
	}
	s.swept = true
	kept := r.Files[:0]
	for _, e := range r.Files {
		if StaleTemp(e) {
			var rm hostfuncs.Empty
			if s.invoke(hostfuncs.FnRemove, hostfuncs.NameRequest{Name: e.Name}, &rm, &rm.Error) == nil {
				continue
			}
		}
		kept = append(kept, e)
	}
	return kept, nil
}

// listed is one token or lock file found in the state directory.
type listed struct {
	prefix string
	name   string
	parsed Name
	age    int64
}

// scan keeps the entries the plugin acts on: regular files (not symlinks,
// directories, FIFOs), whose names obey ValidFileName and parse with one of
// prefixes (ParseName; ParseMarker for MarkerPrefix). They come grouped by prefix, in the order of
// prefixes, and sorted by name (byte order) within a group.
func scan(entries []hostfuncs.ListEntry, prefixes ...string) []listed {
	// Sorting names (slices.Sort of strings, linked already) rather than
	// entries keeps another instance of the sort out of plugin.wasm.
	byName := make(map[string]int64, len(entries))
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if _, dup := byName[e.Name]; dup || e.Type != hostfuncs.StatFile || !ValidFileName(e.Name) {
			continue
		}
		byName[e.Name] = e.AgeSeconds
		names = append(names, e.Name)
	}
	slices.Sort(names)
	var out []listed
	for _, p := range prefixes {
		for _, name := range names {
			if p == MarkerPrefix {
				if inst, ok := ParseMarker(name); ok {
					out = append(out, listed{prefix: p, name: name, parsed: Name{Instance: inst}, age: byName[name]})
				}
			} else if n, ok := ParseName(p, name); ok {
				out = append(out, listed{prefix: p, name: name, parsed: n, age: byName[name]})
			}
		}
	}
	return out
}
