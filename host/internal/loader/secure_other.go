//go:build !unix

package loader

import "runtime"

// Without Unix owners and modes no cache directory can be checked, so
// there is no on-disk cache: every answer is a problem.
func dirProblem(dir string) string {
	return "cannot check the owner of cache directory " + dir + " on " + runtime.GOOS
}

func ensureDir(dir string) string { return dirProblem(dir) }

func treeProblem(root string) string { return dirProblem(root) }
