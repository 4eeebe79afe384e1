package hostfuncs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// The contract's numbers, stated in prose in many places, must be the
// code's: the ABI version (hostfuncs.ABIVersion, which the plugin answers
// and every host checks) and the number of host functions (the plugin's
// imports, hostfuncs.Functions, and the lists the Python and TypeScript
// hosts register). These tests fail when a README, a binding or the plugin
// says another number.

// repoRoot is the repository root, the parent of this package's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func readRepo(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestBindingsRegisterTheContractsFunctions: the Python and TypeScript
// hosts register exactly hostfuncs.Functions(), in its order. That
// plugin.wasm imports the same names, each (i64) -> i64, is the plugin's
// own test (plugin.TestModule).
func TestBindingsRegisterTheContractsFunctions(t *testing.T) {
	quoted := regexp.MustCompile(`"(mcp_resume_[a-z_]+)"`)
	for _, src := range []struct{ file, list string }{
		{"sdk-bindings/python/src/mcp_resume/_hostfuncs.py", `(?s)\nFUNCTIONS = \((.*?)\)\n`},
		{"sdk-bindings/typescript/src/hostfuncs.ts", `(?s)\nexport const FUNCTIONS = \[(.*?)\] as const;`},
	} {
		m := regexp.MustCompile(src.list).FindStringSubmatch(readRepo(t, src.file))
		if m == nil {
			t.Errorf("%s: no FUNCTIONS list found", src.file)
			continue
		}
		var names []string
		for _, q := range quoted.FindAllStringSubmatch(m[1], -1) {
			names = append(names, q[1])
		}
		if !slices.Equal(names, hostfuncs.Functions()) {
			t.Errorf("%s: FUNCTIONS is %v, want hostfuncs.Functions() in its order %v", src.file, names, hostfuncs.Functions())
		}
	}
}

// TestBindingsStateTheABIVersion: the Python and TypeScript hosts check
// the plugin against hostfuncs.ABIVersion.
func TestBindingsStateTheABIVersion(t *testing.T) {
	for file, re := range map[string]string{
		"sdk-bindings/python/src/mcp_resume/_hostfuncs.py": `\nABI_VERSION = "([^"]*)"`,
		"sdk-bindings/typescript/src/hostfuncs.ts":         `\nexport const ABI_VERSION = "([^"]*)";`,
	} {
		m := regexp.MustCompile(re).FindStringSubmatch(readRepo(t, file))
		if m == nil || m[1] != hostfuncs.ABIVersion {
			t.Errorf("%s: ABI_VERSION %v, want %q", file, m, hostfuncs.ABIVersion)
		}
	}
}

// TestReadmesStateTheABIVersion: the contract's title, its ABI check (the
// string the export answers, the refusal's "this host implements"), the
// exports table, the changelog's newest entry and the conformance README
// name hostfuncs.ABIVersion; and every "ABI version N" stated as the
// current one in a README (a title or "(ABI version N)") does too.
func TestReadmesStateTheABIVersion(t *testing.T) {
	v := regexp.QuoteMeta(hostfuncs.ABIVersion)
	contract := readRepo(t, "hostfuncs/README.md")
	for what, re := range map[string]string{
		"title":                 `(?m)^# The host-function contract \(ABI version ` + v + `\)$`,
		"the export's answer":   "output is the ASCII string `" + v + "`",
		"the refusal's wording": `this host implements "` + v + `"`,
		"the exports table":     "\\| `mcp_resume_abi_version` \\| none \\| `" + v + "` \\|",
		"the changelog":         "(?m)^\\| " + v + " \\|",
	} {
		if !regexp.MustCompile(re).MatchString(contract) {
			t.Errorf("hostfuncs/README.md: %s does not state ABI version %s (want a match of %s)", what, hostfuncs.ABIVersion, re)
		}
	}
	current := regexp.MustCompile(`(?i)(?:^#.*|\()ABI version (\d+)`)
	for _, file := range markdownFiles(t) {
		for _, line := range strings.Split(readRepo(t, file), "\n") {
			for _, m := range current.FindAllStringSubmatch(line, -1) {
				if m[1] != hostfuncs.ABIVersion {
					t.Errorf("%s: %q states ABI version %s, the contract's is %s", file, strings.TrimSpace(line), m[1], hostfuncs.ABIVersion)
				}
			}
		}
	}
}

// numberWords are the counts a README may spell out.
var numberWords = map[string]int{"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
	"nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15}

// TestReadmesCountTheHostFunctions: every "<number> host functions" in the
// repository's Markdown (spelled out or in digits, across a line break or
// emphasis) is len(hostfuncs.Functions()), and hostfuncs/README.md has one
// section per function.
func TestReadmesCountTheHostFunctions(t *testing.T) {
	n := len(hostfuncs.Functions())
	count := regexp.MustCompile(`(?i)\b([a-z]+|\d+)[\s*_]+host[\s*_]+functions\b`)
	found := 0
	for _, file := range markdownFiles(t) {
		text := readRepo(t, file)
		for _, m := range count.FindAllStringSubmatchIndex(text, -1) {
			word := strings.ToLower(text[m[2]:m[3]])
			got, isWord := numberWords[word]
			if d, err := strconv.Atoi(word); err == nil {
				got, isWord = d, true
			}
			if !isWord {
				continue // "the host functions", "its host functions"
			}
			found++
			if got != n {
				line := 1 + strings.Count(text[:m[0]], "\n")
				t.Errorf("%s:%d: %q counts %d host functions; hostfuncs.Functions() has %d", file, line, text[m[0]:m[1]], got, n)
			}
		}
	}
	if found == 0 {
		t.Error("no README states the number of host functions: this test looks for the wrong phrase")
	}
	var sections []string
	for _, m := range regexp.MustCompile("(?m)^### `(mcp_resume_[a-z_]+)`$").FindAllStringSubmatch(readRepo(t, "hostfuncs/README.md"), -1) {
		sections = append(sections, m[1])
	}
	if slices.Sort(sections); !slices.Equal(sections, slices.Sorted(slices.Values(hostfuncs.Functions()))) {
		t.Errorf("hostfuncs/README.md sections %v, want one per host function %v", sections, hostfuncs.Functions())
	}
}

// markdownFiles lists the repository's Markdown files (relative paths),
// without dependencies (node_modules, virtual environments) and hidden
// directories.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	root := repoRoot(t)
	var files []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "dist") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
