package main

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// A pgoProgram is what --pgo builds and times: its C files, the flags they
// need, and the script every build runs as `PROGRAM SCRIPT SCALE`.
type pgoProgram struct {
	Name    string   // lua5.4, lua5.4 (one unit) or tinyvm
	Version string   // the release built ("" for tinyvm, which has none)
	Sources []string // the files clang compiles (and links) in one command
	CFlags  []string // before the sources
	LDFlags []string // after them
	Script  string
}

// The programs --pgo-program names.
const (
	pgoLua    = "lua"     // Lua's files compiled one by one, as its makefile does
	pgoLuaOne = "lua-one" // Lua as one translation unit
	pgoTinyVM = "tinyvm"
)

// pgoProgramFor finds the sources of the program --pgo-program names and
// the workload script under testdata/pgo of the module (or --src). Lua's
// single translation unit is written into dir.
func pgoProgramFor(c *config, dir string) (*pgoProgram, error) {
	data := c.srcDir
	if data == "" {
		root, err := moduleRoot()
		if err != nil {
			return nil, fmt.Errorf("%w (or pass --src)", err)
		}
		data = filepath.Join(root, "testdata", "pgo")
	}
	var p *pgoProgram
	switch c.pgoProgram {
	case pgoTinyVM:
		p = &pgoProgram{Name: pgoTinyVM, Sources: []string{filepath.Join(data, "tinyvm.c")}, Script: filepath.Join(data, "workload.tl")}
		if _, err := os.Stat(p.Sources[0]); err != nil {
			return nil, &usageError{fmt.Sprintf("--pgo: %v", err)}
		}
	case pgoLua, pgoLuaOne:
		src, err := luaSource(c)
		if err != nil {
			return nil, err
		}
		p = &pgoProgram{Name: "lua5.4", Script: filepath.Join(data, "workload.lua"),
			CFlags: []string{"-I" + src, "-DLUA_USE_LINUX"}, LDFlags: []string{"-lm", "-ldl"}}
		one := filepath.Join(dir, "onelua.c")
		if p.Version, err = writeOneLua(src, one); err != nil {
			return nil, err
		}
		if c.pgoProgram == pgoLuaOne {
			p.Name += " (one unit)"
			p.Sources = []string{one}
		} else {
			for _, f := range luaFiles {
				p.Sources = append(p.Sources, filepath.Join(src, f+".c"))
			}
		}
	default:
		return nil, &usageError{fmt.Sprintf("--pgo-program: no program %q (have %s, %s, %s)", c.pgoProgram, pgoLua, pgoLuaOne, pgoTinyVM)}
	}
	if _, err := os.Stat(p.Script); err != nil {
		return nil, &usageError{fmt.Sprintf("--pgo: %v", err)}
	}
	return p, nil
}

// luaFiles are the C files of the lua interpreter in the order of Lua 5.4's
// own makefile (CORE_O, LIB_O, then lua.c): its sources are written to
// be compiled together this way (Lua's onelua.c does the same).
var luaFiles = []string{
	"lapi", "lcode", "lctype", "ldebug", "ldo", "ldump", "lfunc", "lgc", "llex", "lmem", "lobject", "lopcodes",
	"lparser", "lstate", "lstring", "ltable", "ltm", "lundump", "lvm", "lzio",
	"lauxlib", "lbaselib", "lcorolib", "ldblib", "liolib", "lmathlib", "loadlib", "loslib", "lstrlib", "ltablib",
	"lutf8lib", "linit", "lua",
}

// writeOneLua writes the single translation unit that includes Lua's
// sources in src, and returns the release (5.4.4) lua.h names; it checks
// that src is Lua 5.4's whichever way the program is built.
func writeOneLua(src, out string) (string, error) {
	var b strings.Builder
	b.WriteString("/* Written by blpp-bench --pgo: the lua interpreter as one translation unit. */\n")
	for _, f := range luaFiles {
		p := filepath.Join(src, f+".c")
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("lua source: %w (not Lua 5.4's src directory?)", err)
		}
		fmt.Fprintf(&b, "#include %q\n", p)
	}
	h, err := os.ReadFile(filepath.Join(src, "lua.h"))
	if err != nil {
		return "", fmt.Errorf("lua source: %w", err)
	}
	version := "5.4"
	if m := regexp.MustCompile(`#define\s+LUA_VERSION_RELEASE\s+"(\d+)"`).FindSubmatch(h); m != nil {
		version += "." + string(m[1])
	}
	if !regexp.MustCompile(`#define\s+LUA_VERSION_MINOR\s+"4"`).Match(h) {
		return "", fmt.Errorf("lua source: %s is not Lua 5.4's", filepath.Join(src, "lua.h"))
	}
	return version, os.WriteFile(out, []byte(b.String()), 0o644)
}

// luaSource returns a directory holding Lua 5.4's src/*.c and *.h: --lua-src
// (the directory or its src/), else the copy cached under the user's cache
// directory, else one fetched from Debian's archive with apt-get source
// (which checks the archive's signatures) and cached there.
func luaSource(c *config) (string, error) {
	if c.luaSrc != "" {
		for _, d := range []string{c.luaSrc, filepath.Join(c.luaSrc, "src")} {
			if _, err := os.Stat(filepath.Join(d, "lua.h")); err == nil {
				return d, nil
			}
		}
		return "", &usageError{fmt.Sprintf("--lua-src %s: no lua.h there or in its src/", c.luaSrc)}
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("lua source: %w (pass --lua-src)", err)
	}
	cache := filepath.Join(base, "blpp-bench", "lua5.4")
	if d := cachedLua(cache); d != "" {
		return d, nil
	}
	fmt.Fprintf(c.stderr, "pgo: fetching Lua 5.4's source with apt-get source into %s\n", cache)
	dl := filepath.Join(cache, "download")
	if err := os.MkdirAll(dl, 0o755); err != nil {
		return "", err
	}
	cmd := exec.Command("apt-get", "source", "--download-only", "lua5.4")
	cmd.Dir = dl
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("lua source: apt-get source --download-only lua5.4: %v: %s (enable deb-src lines for Debian's archive, pass --lua-src DIR with Lua 5.4's src/, or use --pgo-program tinyvm)",
			err, trim(out))
	}
	tarballs, _ := filepath.Glob(filepath.Join(dl, "lua5.4_*.orig.tar.gz"))
	if len(tarballs) != 1 {
		return "", fmt.Errorf("lua source: apt-get source left %d lua5.4_*.orig.tar.gz in %s, want 1", len(tarballs), dl)
	}
	// Extracted beside the cache and renamed into it whole, so that an
	// interrupted extraction never leaves a tree cachedLua would take.
	tmp, err := os.MkdirTemp(cache, "extract-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := extractLuaSrc(tarballs[0], tmp); err != nil {
		return "", fmt.Errorf("lua source: %s: %w", tarballs[0], err)
	}
	d := cachedLua(tmp)
	if d == "" {
		return "", fmt.Errorf("lua source: %s has no lua-5.4*/src/lua.h", tarballs[0])
	}
	tree := filepath.Dir(d)
	if err := os.Rename(tree, filepath.Join(cache, filepath.Base(tree))); err != nil {
		// Another run may have put the same tree there first.
		if d := cachedLua(cache); d != "" {
			return d, nil
		}
		return "", fmt.Errorf("lua source: %w", err)
	}
	return filepath.Join(cache, filepath.Base(tree), "src"), nil
}

// cachedLua is the src directory of the Lua tree extracted under cache, or
// "".
func cachedLua(cache string) string {
	ms, _ := filepath.Glob(filepath.Join(cache, "lua-5.4*", "src", "lua.h"))
	if len(ms) == 0 {
		return ""
	}
	return filepath.Dir(ms[len(ms)-1])
}

// luaMember is the one kind of tarball member extractLuaSrc writes: a C
// file or header directly under the tree's src/.
var luaMember = regexp.MustCompile(`^(lua-5\.4[0-9.]*)/src/([a-z0-9_]+\.[ch])$`)

// extractLuaSrc writes the src/*.c and src/*.h files of Lua's release
// tarball under dir. Other members are skipped; no member names a path of
// its own choosing (the pattern admits no "..", no absolute path, no link).
func extractLuaSrc(tarball, dir string) error {
	f, err := os.Open(tarball)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	n := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		m := luaMember.FindStringSubmatch(h.Name)
		if m == nil || h.Typeflag != tar.TypeReg {
			continue
		}
		if h.Size > 1<<20 {
			return fmt.Errorf("%s: %d bytes, larger than any Lua source file", h.Name, h.Size)
		}
		out := filepath.Join(dir, m[1], "src", m[2])
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		data, err := io.ReadAll(io.LimitReader(tr, h.Size))
		if err != nil {
			return err
		}
		if err := os.WriteFile(out, data, 0o644); err != nil {
			return err
		}
		n++
	}
	if n == 0 {
		return errors.New("no lua-5.4*/src/*.[ch] member")
	}
	return nil
}
