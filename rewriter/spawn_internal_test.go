package rewriter

import "testing"

// TestIsClone3Code checks the recognition of glibc's __clone3 by its code
// (a stripped libc.so names it nowhere): glibc 2.36's bytes, with and
// without endbr64, and variants that must not pass, since the runtime's
// replacement relies on its registers (decision 101).
func TestIsClone3Code(t *testing.T) {
	glibc := []byte{
		0xb8, 0xea, 0xff, 0xff, 0xff, // mov $-EINVAL,%eax
		0x48, 0x85, 0xff, // test %rdi,%rdi
		0x74, 0x2c, // je err
		0x48, 0x85, 0xd2, // test %rdx,%rdx
		0x74, 0x27, // je err
		0x49, 0x89, 0xc8, // mov %rcx,%r8
		0xb8, 0xb3, 0x01, 0x00, 0x00, // mov $435,%eax
		0x0f, 0x05, // syscall
		0x48, 0x85, 0xc0, // test %rax,%rax
		0x7c, 0x18, // jl err
		0x74, 0x01, // je child
		0xc3,       // ret
		0x31, 0xed, // xor %ebp,%ebp
		0x48, 0x83, 0xe4, 0xf0, // and $-16,%rsp
		0x4c, 0x89, 0xc7, // mov %r8,%rdi
		0xff, 0xd2, // call *%rdx
		0x48, 0x89, 0xc7, // mov %rax,%rdi
		0xb8, 0x3c, 0x00, 0x00, 0x00, // mov $60,%eax
		0x0f, 0x05, // syscall
	}
	cat := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	replace := func(at int, b ...byte) []byte {
		out := append([]byte(nil), glibc...)
		copy(out[at:], b)
		return out
	}
	for _, c := range []struct {
		name string
		code []byte
		want bool
	}{
		{"glibc 2.36", glibc, true},
		{"with endbr64", cat([]byte{0xf3, 0x0f, 0x1e, 0xfa}, glibc), true},
		{"clone (56), not clone3", replace(19, 0x38, 0x00), false},
		{"the argument not in %r8", replace(15, 0x49, 0x89, 0xc9), false}, // mov %rcx,%r9
		{"the function called through %rax", replace(42, 0xff, 0xd0), false},
		{"the number not right before the system call", cat(glibc[:23], []byte{0x90}, glibc[23:]), false},
		{"no number", replace(18, 0x90, 0x90, 0x90, 0x90, 0x90), false},
		{"cut short", glibc[:30], false},
		{"empty", nil, false},
	} {
		if got := isClone3Code(c.code); got != c.want {
			t.Errorf("%s: isClone3Code = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCloneName(t *testing.T) {
	for name, want := range map[string]thunkKind{
		"clone": thunkClone, "__clone": thunkClone, "clone@plt": thunkClone, "__clone@@GLIBC_2.2.5": thunkClone,
		"__clone3": thunkClone3, "__clone_internal": thunkNone, "clone3": thunkNone, "fork": thunkNone,
	} {
		if got := cloneName(name); got != want {
			t.Errorf("cloneName(%q) = %d, want %d", name, got, want)
		}
	}
}
