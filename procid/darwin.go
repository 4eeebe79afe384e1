package procid

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// This file holds the macOS rules: decoding the sysctl records kern.proc.pid
// (struct kinfo_proc) and kern.procargs2, or the output of ps where the host
// cannot call sysctl (Node), and the walk's batched reads.

// Layout of struct kinfo_proc on darwin/amd64 and darwin/arm64, which agree
// (both LP64, little-endian; see KinfoProc in golang.org/x/sys/unix
// ztypes_darwin_{amd64,arm64}.go and <sys/sysctl.h>).
const (
	// kinfoSize is sizeof(struct kinfo_proc).
	kinfoSize = 648
	// kinfoStartSec is kp_proc.p_starttime.tv_sec, an int64 (seconds since
	// the Unix epoch).
	kinfoStartSec = 0
	// kinfoStartUsec is kp_proc.p_starttime.tv_usec, an int32.
	kinfoStartUsec = 8
	// kinfoStat is kp_proc.p_stat, an int8 (SIDL 1 ... SZOMB 5).
	kinfoStat = 36
	// kinfoPID is kp_proc.p_pid, an int32.
	kinfoPID = 40
	// kinfoComm is kp_proc.p_comm, MAXCOMLEN+1 = 17 bytes, NUL-terminated.
	kinfoComm = 243
	// kinfoCommLen is the size of p_comm.
	kinfoCommLen = 17
	// kinfoPPID is kp_eproc.e_ppid, an int32.
	kinfoPPID = 560
	// kinfoTdev is kp_eproc.e_tdev, an int32 dev_t: the controlling
	// terminal, NODEV (-1) for none.
	kinfoTdev = 572
)

// darwinZombie is p_stat for a process that exited and was not yet reaped
// (SZOMB in <sys/proc.h>).
const darwinZombie = 5

// kinfo holds the fields of struct kinfo_proc this package uses.
type kinfo struct {
	pid  int
	ppid int
	comm string
	stat int8
	tdev int32
	sec  int64
	usec int32
}

// decodeKinfo decodes one struct kinfo_proc from b, as returned by sysctl
// kern.proc.pid. Errors wrap ErrMalformed: b shorter than kinfoSize, pid 0
// (the kernel's answer for an absent process is an empty buffer, never a
// zeroed record, so a zero pid means garbage), an empty p_comm, or a start
// time that is not positive with tv_usec in 0..999999.
func decodeKinfo(b []byte) (kinfo, error) {
	if len(b) < kinfoSize {
		return kinfo{}, wrap("kinfo_proc is "+itoa(len(b))+" bytes, want "+itoa(kinfoSize), ErrMalformed)
	}
	le := binary.LittleEndian
	k := kinfo{
		pid:  int(int32(le.Uint32(b[kinfoPID:]))),
		ppid: int(int32(le.Uint32(b[kinfoPPID:]))),
		stat: int8(b[kinfoStat]),
		tdev: int32(le.Uint32(b[kinfoTdev:])),
		sec:  int64(le.Uint64(b[kinfoStartSec:])),
		usec: int32(le.Uint32(b[kinfoStartUsec:])),
	}
	comm := b[kinfoComm : kinfoComm+kinfoCommLen]
	if i := bytes.IndexByte(comm, 0); i >= 0 {
		comm = comm[:i]
	}
	k.comm = string(comm)
	switch {
	case k.pid <= 0:
		return kinfo{}, wrap("kinfo_proc has pid "+itoa(k.pid), ErrMalformed)
	case k.ppid < 0:
		return kinfo{}, wrap("kinfo_proc of pid "+itoa(k.pid)+" has ppid "+itoa(k.ppid), ErrMalformed)
	case k.comm == "":
		return kinfo{}, wrap("kinfo_proc of pid "+itoa(k.pid)+" has an empty p_comm", ErrMalformed)
	case k.sec <= 0 || k.usec < 0 || k.usec > 999999:
		return kinfo{}, wrap("kinfo_proc of pid "+itoa(k.pid)+" has start time "+strconv.FormatInt(k.sec, 10)+" s "+itoa(int(k.usec))+" us", ErrMalformed)
	}
	return k, nil
}

// darwinStartTime formats the macOS start time: tv_sec in decimal, whole
// seconds, whatever primitive answered (sysctl or ps; see the package
// documentation for why seconds suffice).
func darwinStartTime(sec int64) string {
	return strconv.FormatInt(sec, 10)
}

// process converts k to a Process with the given args; its terminal is
// known (e_tdev).
func (k kinfo) process(args []string) Process {
	return Process{PID: k.pid, PPID: k.ppid, Name: k.comm, Args: args, StartTime: darwinStartTime(k.sec), zombie: k.stat == darwinZombie,
		tty: k.tdev, ttyKnown: true}
}

// decodeProcArgs decodes a kern.procargs2 record: a little-endian int32
// argc, the executable path NUL-terminated, NUL padding, then argc
// NUL-terminated arguments, then the environment (ignored here; see
// decodeProcArgsEnv). Trailing empty arguments are dropped, as on Linux,
// since a retitled process (node, npm) leaves its old argument area
// NUL-padded. Errors wrap ErrMalformed.
func decodeProcArgs(b []byte) ([]string, error) {
	args, _, err := decodeProcArgsEnv(b)
	return args, err
}

// decodeProcArgsEnv is decodeProcArgs, also returning the environment
// ("NAME=value" strings, up to the first empty one), which the trust rule
// reads for a desktop session: DecodeProcArgs2 with the walk's trimming of
// trailing empty arguments.
func decodeProcArgsEnv(b []byte) ([]string, []string, error) {
	args, env, err := DecodeProcArgs2(b)
	if err != nil {
		return nil, nil, err
	}
	for len(args) > 0 && args[len(args)-1] == "" {
		args = args[:len(args)-1]
	}
	if len(args) == 0 {
		args = nil
	}
	return args, env, nil
}

// psStat is one line of `ps -o pid=,ppid=,stat=,lstart=,ucomm=`.
type psStat struct {
	pid, ppid int
	state     string
	sec       int64
	comm      string
}

var (
	psMonths = []string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}
	psDays   = []string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}
)

// cutField removes leading blanks from s and returns its first
// blank-separated field and the rest (starting at the blank after it).
func cutField(s string) (field, rest string) {
	s = strings.TrimLeft(s, " \t")
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i:]
}

// parsePsStat parses the output of `LC_ALL=C TZ=UTC0 /bin/ps -o
// pid=,ppid=,stat=,lstart=,ucomm= -p <pid>`: one line
//
//	pid ppid stat Www Mmm d hh:mm:ss yyyy ucomm
//
// where lstart is strftime("%c") in the C locale and UTC, and ucomm (the
// rest of the line) may contain spaces. The weekday must agree with the
// date. Errors wrap ErrMalformed, or ErrNotFound for empty output.
func parsePsStat(out []byte) (psStat, error) {
	line := strings.TrimRight(string(out), " \t\r\n")
	if strings.TrimSpace(line) == "" {
		return psStat{}, wrap("ps printed nothing", ErrNotFound)
	}
	if strings.ContainsRune(line, '\n') {
		return psStat{}, wrap("ps printed more than one line", ErrMalformed)
	}
	bad := func() (psStat, error) {
		return psStat{}, wrap("cannot parse ps line "+quote(truncate([]byte(line))), ErrMalformed)
	}
	var f [8]string
	rest := line
	for i := range f {
		f[i], rest = cutField(rest)
	}
	pid, err1 := strconv.Atoi(f[0])
	ppid, err2 := strconv.Atoi(f[1])
	comm := strings.TrimSpace(rest)
	if err1 != nil || err2 != nil || pid <= 0 || ppid < 0 || f[2] == "" || comm == "" {
		return bad()
	}
	month := indexOf(psMonths, f[4])
	day, err3 := strconv.Atoi(f[5])
	year, err4 := strconv.Atoi(f[7])
	hms := strings.Split(f[6], ":")
	if month < 0 || err3 != nil || err4 != nil || len(hms) != 3 || len(f[7]) != 4 {
		return bad()
	}
	var clock [3]int
	for i, s := range hms {
		n, err := strconv.Atoi(s)
		if err != nil || len(s) != 2 || n < 0 {
			return bad()
		}
		clock[i] = n
	}
	if day < 1 || day > daysIn(year, month+1) || clock[0] > 23 || clock[1] > 59 || clock[2] > 59 {
		return bad()
	}
	days := daysFromCivil(year, month+1, day)
	sec := days*86400 + int64(clock[0]*3600+clock[1]*60+clock[2])
	// 1970-01-01 was a Thursday (psDays[4]).
	if sec <= 0 || psDays[(days+4)%7] != f[3] {
		return bad()
	}
	return psStat{pid: pid, ppid: ppid, state: f[2], sec: sec, comm: comm}, nil
}

// daysIn returns the number of days of month m (1-12) of year y in the
// proleptic Gregorian calendar.
func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the number of days from 1970-01-01 to y-m-d (m
// 1-12, y >= 0) in the proleptic Gregorian calendar: H. Hinnant's
// days_from_civil. The time package would do it too, at some 25 KB of
// plugin.wasm (a lean guest starts fast).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	yoe := y - era*400
	doy := (153*((m+9)%12)+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era*146097 + doe - 719468)
}

// indexOf returns the index of s in list, or -1.
func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// parsePsArgs parses the output of `ps -ww -o args= -p <pid>` into an
// argument vector: a retitled npm process ("npm exec foo", "npm run dev") stays one
// element, as Linux shows it; anything else is split on white space, so an
// argument containing spaces is split wrongly (only the launcher rules read
// them). nil when empty.
func parsePsArgs(out []byte) []string {
	line := strings.TrimSpace(string(out))
	if line == "" {
		return nil
	}
	if isNPMTitle(line) {
		return []string{line}
	}
	return strings.Fields(line)
}

// darwinProcess builds pid's Process from the answer to sysctl (and, when
// not nil, procargs) or, with ps set, from the answer to ps. Errors wrap
// ErrNotFound for a gone process.
func darwinProcess(pid int, r hostfuncs.InspectResult, procargs *hostfuncs.InspectResult, ps bool) (Process, error) {
	op := "sysctl kern.proc.pid." + strconv.Itoa(pid)
	if ps {
		op = "ps -p " + strconv.Itoa(pid)
	}
	if err := resultErr(op, r); err != nil {
		return Process{}, err
	}
	// Absence is answered as not_found; a success without data is a
	// response that lacks its field: cannot tell, never gone.
	if len(r.Data) == 0 {
		return Process{}, wrap(op+": the answer has no data", ErrMalformed)
	}
	if ps {
		st, err := parsePsStat(r.Data)
		if err != nil {
			return Process{}, wrap(op, err)
		}
		if st.pid != pid {
			return Process{}, wrap(op+" described pid "+itoa(st.pid), ErrMalformed)
		}
		return Process{PID: pid, PPID: st.ppid, Name: st.comm, Args: parsePsArgs(r.Args),
			StartTime: darwinStartTime(st.sec), zombie: strings.HasPrefix(st.state, "Z"), ttyFG: strings.Contains(st.state, "+")}, nil
	}
	k, err := decodeKinfo(r.Data)
	if err != nil {
		return Process{}, wrap(op, err)
	}
	if k.pid != pid {
		return Process{}, wrap(op+" returned pid "+itoa(k.pid), ErrMalformed)
	}
	var args, env []string
	envKnown := false
	if procargs != nil && procargs.Error == nil {
		var err error
		args, env, err = decodeProcArgsEnv(procargs.Data)
		envKnown = err == nil
	}
	p := k.process(args)
	p.env, p.envKnown = env, envKnown
	return p, nil
}

// darwinWalker reads one level of the walk per host call, with sysctl and
// procargs, or with ps where the host cannot call sysctl.
type darwinWalker struct {
	in Inspector
	ps bool
}

// step implements walker.
func (w darwinWalker) step(child Process) (stepResult, error) {
	ops := []hostfuncs.InspectOp{opPID(hostfuncs.OpSysctl, child.PPID), opPID(hostfuncs.OpProcargs, child.PPID), opPID(hostfuncs.OpSysctl, child.PID)}
	if w.ps {
		ops = []hostfuncs.InspectOp{opPID(hostfuncs.OpPs, child.PPID), opPID(hostfuncs.OpPs, child.PID)}
	}
	res, err := inspect(w.in, ops)
	if err != nil {
		return stepResult{}, err
	}
	var r stepResult
	if w.ps {
		r.parent, r.parentErr = darwinProcess(child.PPID, res[0], nil, true)
		r.again, r.againErr = darwinProcess(child.PID, res[1], nil, true)
		return r, nil
	}
	r.parent, r.parentErr = darwinProcess(child.PPID, res[0], &res[1], false)
	r.again, r.againErr = darwinProcess(child.PID, res[2], nil, false)
	return r, nil
}

// darwinSelf reads the server process with sysctl, or with ps when the host
// answers sysctl unsupported (one more call). ps reports which was used.
func darwinSelf(in Inspector, pid int) (p Process, ps bool, err error) {
	res, err := inspect(in, []hostfuncs.InspectOp{opPID(hostfuncs.OpSysctl, pid)})
	if err != nil {
		return Process{}, false, err
	}
	if code(res[0]) == hostfuncs.CodeUnsupported {
		if res, err = inspect(in, []hostfuncs.InspectOp{opPID(hostfuncs.OpPs, pid)}); err != nil {
			return Process{}, true, err
		}
		p, err = darwinProcess(pid, res[0], nil, true)
		return p, true, err
	}
	p, err = darwinProcess(pid, res[0], nil, false)
	return p, false, err
}

// resolveDarwin implements ResolveFor on macOS, for the server pid. There are no subreapers on
// macOS (an orphan is adopted by launchd, pid 1, which the walk refuses), so
// there is no stdio check.
func resolveDarwin(f hostfuncs.Facts, pid int, set LauncherSet, in Inspector) (Identity, error) {
	self, ps, err := darwinSelf(in, pid)
	if err != nil {
		return Identity{}, wrap("resolve MCP host of pid "+itoa(pid), err)
	}
	id, err := walk(darwinWalker{in: in, ps: ps}, self, set)
	if err != nil {
		return id, err
	}
	id.Stdio = "not checked: no subreapers on this system"
	id.StartTime += "." + darwinImage(id.Chain[len(id.Chain)-1].Name)
	return id, nil
}

// darwinImage is the macOS stand-in for the program image in a host's start
// time: "c" and the lowercase hex of p_comm, the first 16 bytes of the name
// of the file the process last exec'd (struct kinfo_proc, or ucomm from ps,
// the same field), which execve(2) replaces while the pid and p_starttime
// stay. Neither sysctl nor ps gives the executable's device and inode to
// every host (Node has only ps), so an exec into a program of the same file
// name is not told apart on macOS. The "c" keeps it apart from the
// "<tv_usec>" of names written before ABI 3.
func darwinImage(comm string) string {
	return "c" + hex.EncodeToString([]byte(comm))
}

// darwinStartMatches reports whether the macOS start time have ("<tv_sec>")
// is the one recorded as want. Files written before ABI 3 by the Go and
// Python hosts record "<tv_sec>.<tv_usec>": those match on the seconds.
// Erring towards "alive" only ever keeps a file prune could have deleted,
// never resumes a session.
func darwinStartMatches(have, want string) bool {
	if have == want {
		return true
	}
	sec, usec, ok := strings.Cut(want, ".")
	return ok && sec == have && len(usec) == 6 && !strings.Contains(usec, ".")
}

// darwinAlive answers liveness for one file from the answer to sysctl (or
// ps).
func darwinAlive(pid int, want string, r hostfuncs.InspectResult, ps bool) string {
	p, err := darwinProcess(pid, r, nil, ps)
	switch {
	case errors.Is(err, ErrNotFound):
		return hostfuncs.HostGone
	case err != nil:
		return hostfuncs.HostUnknown
	case p.zombie:
		return hostfuncs.HostGone
	case want == p.StartTime+"."+darwinImage(p.Name):
		return hostfuncs.HostAlive
	case strings.Contains(want, ".c"):
		// Another image (the host exec'd), or another process.
		return hostfuncs.HostGone
	case darwinStartMatches(p.StartTime, want):
		// A name written before the image was part of it.
		return hostfuncs.HostAlive
	default:
		return hostfuncs.HostGone
	}
}
