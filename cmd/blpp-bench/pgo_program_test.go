package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// writeTarball writes a .tar.gz of members (name → content; a content of
// "->target" is a symbolic link).
func writeTarball(t *testing.T, path string, members [][2]string) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, m := range members {
		h := &tar.Header{Name: m[0], Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(m[1]))}
		if target, ok := strings.CutPrefix(m[1], "->"); ok {
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, target, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(m[1])); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestExtractLuaSrc: only src/*.c and src/*.h of the release tree come out
// of the tarball, and no member writes outside the directory given.
func TestExtractLuaSrc(t *testing.T) {
	dir := t.TempDir()
	tarball := filepath.Join(dir, "lua5.4_5.4.9.orig.tar.gz")
	writeTarball(t, tarball, [][2]string{
		{"lua-5.4.9/src/lua.h", "#define LUA_VERSION_MINOR \"4\"\n"},
		{"lua-5.4.9/src/lapi.c", "int x;\n"},
		{"lua-5.4.9/src/../../evil.c", "bad\n"},
		{"/tmp/abs.c", "bad\n"},
		{"lua-5.4.9/src/link.c", "->/etc/passwd"},
		{"lua-5.4.9/doc/readme.html", "<html>\n"},
		{"lua-5.4.9/src/Makefile", "all:\n"},
	})
	out := filepath.Join(dir, "out")
	if err := extractLuaSrc(tarball, out); err != nil {
		t.Fatal(err)
	}
	var got []string
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && p != tarball {
			rel, _ := filepath.Rel(dir, p)
			got = append(got, rel)
		}
		return nil
	})
	sort.Strings(got)
	want := []string{"out/lua-5.4.9/src/lapi.c", "out/lua-5.4.9/src/lua.h"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("extracted %v, want %v", got, want)
	}
	if d := cachedLua(out); d != filepath.Join(out, "lua-5.4.9", "src") {
		t.Errorf("cachedLua = %q", d)
	}

	// A tarball without Lua's sources, and one whose member claims a
	// size no Lua source file has, are refused.
	empty := filepath.Join(dir, "empty.tar.gz")
	writeTarball(t, empty, [][2]string{{"x/README", "hi\n"}})
	if err := extractLuaSrc(empty, filepath.Join(dir, "e")); err == nil {
		t.Error("a tarball without lua-5.4*/src/ extracted")
	}
	big := filepath.Join(dir, "big.tar.gz")
	writeTarball(t, big, [][2]string{{"lua-5.4.9/src/lvm.c", strings.Repeat("x", 1<<20+1)}})
	if err := extractLuaSrc(big, filepath.Join(dir, "b")); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("an oversized member: %v", err)
	}
}

// TestWriteOneLua: the translation unit includes every file of Lua's
// makefile, and a source tree that is not Lua 5.4's is refused.
func TestWriteOneLua(t *testing.T) {
	src := t.TempDir()
	for _, f := range luaFiles {
		if err := os.WriteFile(filepath.Join(src, f+".c"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := filepath.Join(src, "lua.h")
	os.WriteFile(h, []byte("#define LUA_VERSION_MINOR\t\"4\"\n#define LUA_VERSION_RELEASE\t\"6\"\n"), 0o644)
	out := filepath.Join(t.TempDir(), "onelua.c")
	v, err := writeOneLua(src, out)
	if err != nil || v != "5.4.6" {
		t.Fatalf("writeOneLua: %q, %v; want 5.4.6", v, err)
	}
	text, _ := os.ReadFile(out)
	if n := strings.Count(string(text), "#include"); n != len(luaFiles) || !strings.Contains(string(text), filepath.Join(src, "lvm.c")) {
		t.Errorf("%d includes, want %d:\n%s", n, len(luaFiles), text)
	}
	os.WriteFile(h, []byte("#define LUA_VERSION_MINOR\t\"3\"\n"), 0o644)
	if _, err := writeOneLua(src, out); err == nil {
		t.Error("Lua 5.3's lua.h accepted")
	}
	os.Remove(filepath.Join(src, "lvm.c"))
	if _, err := writeOneLua(src, out); err == nil || !strings.Contains(err.Error(), "lvm.c") {
		t.Errorf("a tree without lvm.c: %v", err)
	}
}
