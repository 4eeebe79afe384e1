package render

import "strconv"

// The handle store's commands, `mcp-resume state list|gc`: the input's
// apps carry the handle_list output ("list") or the handle_gc output
// ("gc") of each app's handle store:
//
//	{"command": "state_list"|"state_gc", "json"?: bool,
//	 "apps": [{"app", "state_dir", "state_url"?, "list"?: <handle_list output>, "gc"?: <handle_gc output>}]}
//
// A store on Redis has no state_dir: its state_url (handles_open's, the
// password shown as ***) names where it lives instead.
//
// Every value printed comes from those outputs, which hold key-hash
// prefixes, states, generations, sizes, ages and counts: never a value, a
// handle or a principal. One function renders both commands, reading
// members through one loop (cells) rather than a call each: in Go's wasm
// every call site costs code (written out as two functions, these tables
// cost plugin.wasm 40 KB; as one, about 21 KB).

// stateList renders `state list`: one row per handle or tombstone, then
// one summary line per app; stateGC renders `state gc`: one row of counts
// per app. JSON: an array with one object per app, its app and state_dir
// followed by the members of the handle_list or handle_gc output.
func stateList(apps []*node, asJSON bool) []byte {
	return state(apps, "list", asJSON, "APP", "KEY", "STATE", "GEN", "SIZE", "AGE", "IDLE")
}

func stateGC(apps []*node, asJSON bool) []byte {
	return state(apps, "gc", asJSON, "APP", "EXPIRED IDLE", "EXPIRED MAX AGE", "TOMBSTONES DROPPED", "ORPHANS REMOVED", "TEMPS REMOVED", "LIVE", "DIRECTORY")
}

// state renders the state commands: member is "list" or "gc", head the
// table's header.
func state(apps []*node, member string, asJSON bool, head ...string) []byte {
	all, t := &node{kind: '['}, [][]string{head}
	var summary []byte
	for _, a := range apps {
		app, dir, m := a.str("app"), a.str("state_dir"), a.get(member)
		if dir == "" {
			dir = a.str("state_url")
		}
		row := &node{kind: '{', keys: []string{"app", "state_dir"}, vals: []*node{{kind: '"', text: app}, {kind: '"', text: dir}}}
		if m != nil && m.kind == '{' {
			row.keys, row.vals = append(row.keys, m.keys...), append(row.vals, m.vals...)
		}
		all.vals = append(all.vals, row)
		if member == "gc" {
			t = append(t, append(append([]string{app}, cells(m, "expired_idle", "expired_max_age", "tombstones_dropped", "orphans_removed", "temps_removed", "live")...), dir))
			continue
		}
		for _, h := range m.list("handles") {
			c := cells(h, "key", "state", "generation", "size", "age_ms", "idle_ms")
			if c[1] != "live" {
				c[2], c[3] = "-", "-"
			}
			c[4], c[5] = msAge(c[4]), msAge(c[5])
			t = append(t, append([]string{app}, c...))
		}
		s := cells(m, "live", "tombstones", "shards", "bytes")
		summary = append(summary, app+": "+s[0]+" live, "+s[1]+" tombstones, "+s[2]+" shards, "+s[3]+" bytes in "+dir+"\n"...)
	}
	switch {
	case asJSON:
		return append(write(nil, all, 0), '\n')
	case len(apps) == 0:
		return []byte("no handle stores\n")
	case len(t) == 1:
		return summary
	case summary != nil:
		return append(append(table(t), '\n'), summary...)
	}
	return table(t)
}

// cells returns the members keys of n as text, "0" for one left out (the
// outputs omit zero generations and sizes).
func cells(n *node, keys ...string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		if out[i] = n.str(k); out[i] == "" {
			out[i] = "0"
		}
	}
	return out
}

// msAge is Age of a number of milliseconds ("-" when not a number).
func msAge(ms string) string {
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return "-"
	}
	return Age(max(n, 0) / 1000)
}
