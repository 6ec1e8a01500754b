package enc

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestCopyDisp32AgainstGNUAs assembles each table load as a compiler
// emits it, copies it with CopyDisp32, stores a new displacement in the
// field, and compares with GNU as's encoding of the same instruction with
// that displacement in its 32-bit form.
func TestCopyDisp32AgainstGNUAs(t *testing.T) {
	asPath := fixture.RequireTool(t, "as", "binutils")
	// %s is the displacement: "" (none), or a number.
	forms := []string{
		"movslq %s(%%rdx,%%rax,4),%%rax",
		"movslq %s(%%rbp,%%rsi,4),%%rsi",
		"movslq %s(%%r13,%%rax,4),%%rax",
		"movslq %s(%%r12,%%rcx,4),%%rdx",
		"movslq %s(%%rsp,%%rax,4),%%rax",
		"mov %s(%%r14,%%rax,8),%%rax",
		"mov %s(,%%rax,8),%%rax",
		"mov %s(%%rax,%%rdx,1),%%eax",
		"jmp *%s(%%r14,%%rax,8)",
		"notrack jmp *%s(%%rdx,%%rax,8)",
		"jmp *%s(,%%rax,8)",
		"cmpl $7,%s(%%rax,%%rcx,4)",
		"movl $0x12345,%s(%%rbx)",
		"movslq %s(%%rdx),%%rax",
	}
	origDisps := []string{"", "0", "8", "-8", "0x400", "0x73af00"}
	newDisps := []int32{0, 1, -1, 0x1000, -0x7ff00000, 0x7fffffff}
	var orig, want strings.Builder
	orig.WriteString("\t.text\n")
	want.WriteString("\t.text\n")
	type cs struct{ o, w string }
	var cases []cs
	n := 0
	for _, f := range forms {
		for _, od := range origDisps {
			if strings.Contains(f, "(,") && od == "" {
				continue // a base-less operand always has its disp32
			}
			for _, nd := range newDisps {
				o := fmt.Sprintf(f, od)
				w := "{disp32} " + fmt.Sprintf(f, fmt.Sprint(nd))
				if strings.HasPrefix(f, "notrack") {
					w = "notrack {disp32} jmp *" + strings.TrimPrefix(fmt.Sprintf(f, fmt.Sprint(nd)), "notrack jmp *")
				}
				fmt.Fprintf(&orig, "o%d:\n\t%s\n", n, o)
				fmt.Fprintf(&want, "w%d:\n\t%s\n", n, w)
				cases = append(cases, cs{o, w})
				n++
			}
		}
	}
	fmt.Fprintf(&orig, "o%d:\n", n)
	fmt.Fprintf(&want, "w%d:\n", n)
	dir := t.TempDir()
	assemble := func(name, src string) ([]byte, map[string]uint64) {
		s, o := filepath.Join(dir, name+".s"), filepath.Join(dir, name+".o")
		if err := os.WriteFile(s, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(asPath, "--64", "-o", o, s).CombinedOutput(); err != nil {
			t.Fatalf("as: %v\n%s", err, out)
		}
		return readObject(t, o)
	}
	otext, osyms := assemble("orig", orig.String())
	wtext, wsyms := assemble("want", want.String())
	bad := 0
	for i, c := range cases {
		ob := otext[osyms[fmt.Sprintf("o%d", i)]:osyms[fmt.Sprintf("o%d", i+1)]]
		wb := wtext[wsyms[fmt.Sprintf("w%d", i)]:wsyms[fmt.Sprintf("w%d", i+1)]]
		in, err := x86.Decode(ob, 0x1000)
		if err != nil {
			t.Fatalf("%s: %v", c.o, err)
		}
		var b Buf
		at, _, err := b.CopyDisp32(&in.Info, ob)
		if err != nil {
			t.Fatalf("%s: %v", c.o, err)
		}
		nd := newDisps[i%len(newDisps)]
		got, err := b.Finish(0)
		if err != nil {
			t.Fatal(err)
		}
		binary.LittleEndian.PutUint32(got[at:], uint32(nd))
		if !bytes.Equal(got, wb) {
			t.Errorf("%s → %s: got % x, as gives % x", c.o, c.w, got, wb)
			if bad++; bad > 20 {
				t.Fatal("too many mismatches")
			}
		}
	}
	t.Logf("%d cases", len(cases))
}

func TestCopyDisp32Refuses(t *testing.T) {
	for _, h := range []string{
		"48 8b 05 10 00 00 00", // mov 0x10(%rip),%rax
		"48 89 c8",             // mov %rcx,%rax
		"e9 00 00 00 00",       // jmp rel32
	} {
		code := mustHex(t, h)
		in := decodeAt(t, code, 0x1000)
		var b Buf
		if _, _, err := b.CopyDisp32(&in.Info, code); err == nil {
			t.Errorf("%s: accepted", h)
		}
		if b.Len() != 0 {
			t.Errorf("%s: emitted %d bytes", h, b.Len())
		}
	}
}
