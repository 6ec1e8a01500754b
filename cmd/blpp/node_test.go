package main

import (
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestRunNode runs a node script under blpp run. V8 copies its embedded
// builtins next to its heap at start-up and runs the copy (short builtin
// calls): an entry jump written into them went astray there and node
// died of SIGSEGV (decision 115). The script must behave as it does
// alone, and the profile must carry no warning of inexact counts.
func TestRunNode(t *testing.T) {
	node := fixture.RequireTool(t, "node", "nodejs")
	if !hasSymbolPrefix(node, "Builtins_") {
		// Debian's own nodejs keeps V8 in a stripped libnode, whose
		// builtins have no names to know them by.
		t.Skipf("%s: V8's builtins are not named in its symbol table, and blpp knows them only by name (decision 115)", node)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "work.js")
	text := `const m = new Map();
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
let out = [];
for (let i = 0; i < 2000; i++) m.set("k" + i, i * 3);
out.push(fib(18));
out.push([...m.values()].reduce((a, b) => a + b, 0));
out.push(JSON.stringify({a: [1, 2, {b: "x".repeat(5)}]}));
out.push([5, 3, 9, 1].sort((a, b) => a - b).join(","));
try { null.x; } catch (e) { out.push(e.constructor.name); }
console.log(out.join(" "));
process.exitCode = 4;
`
	if err := os.WriteFile(script, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	want := runProc(t, dir, nil, nil, node, script)
	if want.code != 4 || !strings.Contains(want.stdout, "TypeError") {
		t.Fatalf("node itself: status %d, stdout %q, stderr %q", want.code, want.stdout, want.stderr)
	}
	got, _ := blppRun(t, dir, nil, []string{"--libs", "none"}, node, script)
	sameBehaviour(t, "blpp run node", want, got)
	rep, err := os.ReadFile(filepath.Join(dir, "report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rep), "warning") || !strings.Contains(string(rep), "path executions") {
		t.Errorf("the report:\n%s", clip(string(rep)))
	}
}

// hasSymbolPrefix reports whether the ELF file at path has a symbol
// whose name starts with prefix.
func hasSymbolPrefix(path, prefix string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	syms, _ := f.Symbols()
	for _, s := range syms {
		if strings.HasPrefix(s.Name, prefix) {
			return true
		}
	}
	return false
}
