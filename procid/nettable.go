package procid

import (
	"strconv"
	"strings"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// This file parses the socket tables of /proc/<pid>/net (proc_net(5)),
// which the host's net operation reads: the one parser of them in the
// repository, used by the trust rule (a host's listening sockets, trust.go)
// and the stdio socket rule (the family of a socket on the server's stdio,
// stdio.go).

// tcpListen is the state column of a TCP socket in state LISTEN
// (TCP_LISTEN in the kernel's include/net/tcp_states.h, printed %02X).
const tcpListen = 0x0A

// netSocket is one row of a socket table.
type netSocket struct {
	// table is the table the row came from: one of hostfuncs.NetTables.
	table string
	// addr is the local address in network byte order, 4 bytes (tcp, udp)
	// or 16 (tcp6, udp6); nil for unix.
	addr []byte
	// port is the local port (tcp, tcp6, udp, udp6).
	port int
	// state is the st column: the TCP state (tcpListen ...), the UDP
	// socket's state, or the Unix socket's SS_ state.
	state int
	// inode is the socket's inode, the N of its fd link "socket:[N]".
	inode uint64
}

// netTableError wraps ErrMalformed for a table that does not parse.
func netTableError(table string, line int, why string) error {
	return wrap("/proc/net/"+table+" line "+itoa(line)+": "+why, ErrMalformed)
}

// parseNetTable parses the contents of /proc/<pid>/net/<table>, table one of
// hostfuncs.NetTables (proc_net(5); the kernel's tcp4_seq_show,
// tcp6_seq_show, udp4_format_sock, udp6_seq_show and unix_seq_show print
// them). The first line is the column header and is skipped; every other
// non-empty line must parse:
//
//   - tcp, udp: "sl: local rem st tx:rx tr:when retrnsmt uid timeout inode
//     ...", the local address 8 hex digits and a 4-hex-digit port after a
//     colon (the address is the kernel's __be32 printed as a native 32-bit
//     number, so its bytes are reversed on little-endian machines);
//   - tcp6, udp6: the same with 32 hex digits, four such 32-bit words;
//   - unix: "Num: RefCount Protocol Flags Type St Inode [Path]", St and
//     Inode the 6th and 7th columns.
//
// It returns the rows in order. Errors wrap ErrMalformed: an unknown table,
// a line with too few columns or a column that is not the hexadecimal or
// decimal number it should be.
//
// Addresses are read as a little-endian machine prints them (x86, arm64,
// riscv64, ppc64le: every system mcp-resume runs on in practice); on a
// big-endian one a loopback address reads as another address.
func parseNetTable(table string, data []byte) ([]netSocket, error) {
	var out []netSocket
	inet, addrLen := true, 0
	switch table {
	case "tcp", "udp":
		addrLen = 4
	case "tcp6", "udp6":
		addrLen = 16
	case "unix":
		inet = false
	default:
		return nil, wrap("unknown socket table "+quote(table), ErrMalformed)
	}
	lines := strings.Split(string(data), "\n")
	for i, line := range lines {
		if i == 0 {
			continue // the header
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		s := netSocket{table: table}
		if !inet {
			if len(f) < 7 || !strings.HasSuffix(f[0], ":") {
				return nil, netTableError(table, i+1, "want at least 7 columns, the first ending in ':'")
			}
			st, err1 := strconv.ParseUint(f[5], 16, 8)
			ino, err2 := strconv.ParseUint(f[6], 10, 64)
			if err1 != nil || err2 != nil {
				return nil, netTableError(table, i+1, "bad St "+quote(f[5])+" or Inode "+quote(f[6]))
			}
			s.state, s.inode = int(st), ino
			out = append(out, s)
			continue
		}
		if len(f) < 10 || !strings.HasSuffix(f[0], ":") {
			return nil, netTableError(table, i+1, "want at least 10 columns, the first ending in ':'")
		}
		hexAddr, hexPort, ok := strings.Cut(f[1], ":")
		port, err1 := strconv.ParseUint(hexPort, 16, 16)
		st, err2 := strconv.ParseUint(f[3], 16, 8)
		ino, err3 := strconv.ParseUint(f[9], 10, 64)
		addr, err4 := parseNetAddr(hexAddr, addrLen)
		if !ok || len(hexPort) != 4 || err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			return nil, netTableError(table, i+1, "bad local address "+quote(f[1])+", st "+quote(f[3])+" or inode "+quote(f[9]))
		}
		s.addr, s.port, s.state, s.inode = addr, int(port), int(st), ino
		out = append(out, s)
	}
	return out, nil
}

// parseNetAddr decodes the hex local address of a tcp/udp (n 4) or
// tcp6/udp6 (n 16) row into network byte order: each group of 8 hex digits
// is a 32-bit word printed in the machine's (little-endian) order.
func parseNetAddr(h string, n int) ([]byte, error) {
	if len(h) != 2*n {
		return nil, ErrMalformed
	}
	out := make([]byte, n)
	for w := 0; w < n/4; w++ {
		v, err := strconv.ParseUint(h[8*w:8*w+8], 16, 32)
		if err != nil {
			return nil, ErrMalformed
		}
		out[4*w], out[4*w+1], out[4*w+2], out[4*w+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	return out, nil
}

// isLoopback reports whether addr (4 or 16 bytes, network order) is a
// loopback address: 127.0.0.0/8, ::1, or ::ffff:127.0.0.0/104 (an IPv4
// loopback address mapped to IPv6). 0.0.0.0 and :: (every address) are not.
func isLoopback(addr []byte) bool {
	switch len(addr) {
	case 4:
		return addr[0] == 127
	case 16:
		for i := 0; i < 10; i++ {
			if addr[i] != 0 {
				return false
			}
		}
		if addr[10] == 0xff && addr[11] == 0xff {
			return addr[12] == 127
		}
		if addr[10] != 0 || addr[11] != 0 {
			return false
		}
		return addr[12] == 0 && addr[13] == 0 && addr[14] == 0 && addr[15] == 1
	}
	return false
}

// String formats the socket's local address for messages: "0.0.0.0:8000",
// "[::]:8000", "[::ffff:7f00:1]:80", or "unix socket:[N]".
func (s netSocket) String() string {
	switch len(s.addr) {
	case 4:
		return itoa(int(s.addr[0])) + "." + itoa(int(s.addr[1])) + "." + itoa(int(s.addr[2])) + "." + itoa(int(s.addr[3])) + ":" + itoa(s.port)
	case 16:
		return "[" + formatIPv6(s.addr) + "]:" + itoa(s.port)
	}
	return "unix socket:[" + strconv.FormatUint(s.inode, 10) + "]"
}

// formatIPv6 writes a 16-byte address in the RFC 5952 form, the longest
// run of two or more zero groups as "::", without the net package (a lean
// guest).
func formatIPv6(a []byte) string {
	var g [8]int
	for i := range g {
		g[i] = int(a[2*i])<<8 | int(a[2*i+1])
	}
	best, bestLen := -1, 1
	for i := 0; i < 8; {
		if g[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && g[j] == 0 {
			j++
		}
		if j-i > bestLen {
			best, bestLen = i, j-i
		}
		i = j
	}
	out := ""
	for i := 0; i < 8; i++ {
		if i == best {
			out += "::"
			i += bestLen - 1
			continue
		}
		if out != "" && !strings.HasSuffix(out, ":") {
			out += ":"
		}
		out += strconv.FormatUint(uint64(g[i]), 16)
	}
	return out
}

// socketInode returns N of a socket fd's link target "socket:[N]", and
// false for any other target.
func socketInode(target string) (uint64, bool) {
	n, ok := strings.CutPrefix(target, "socket:[")
	n, ok2 := strings.CutSuffix(n, "]")
	if !ok || !ok2 {
		return 0, false
	}
	ino, err := strconv.ParseUint(n, 10, 64)
	return ino, err == nil
}

// netTable parses the answer r to the net operation for table: the rows,
// or an error saying why the table cannot tell (the read failed, the
// answer is exactly the read limit and so may be cut short, or it does not
// parse; a failed read wraps the sentinel of its code).
func netTable(what, table string, r hostfuncs.InspectResult) ([]netSocket, error) {
	if err := resultErr("read "+what, r); err != nil {
		return nil, err
	}
	if len(r.Data) >= hostfuncs.MaxProcTableRead {
		return nil, wrap("read "+what+": the table fills the read limit of "+itoa(hostfuncs.MaxProcTableRead)+" bytes, so it may be cut short", ErrNoAnswer)
	}
	rows, err := parseNetTable(table, r.Data)
	if err != nil {
		return nil, wrap("read "+what, err)
	}
	return rows, nil
}
