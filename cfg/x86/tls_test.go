package x86

import "testing"

// TestTLSCall checks the TLS general-dynamic call padding
// (data16 data16 rex.W call rel32), 8 bytes, which shared libraries use
// for every __tls_get_addr call.
func TestTLSCall(t *testing.T) {
	code := []byte{0x66, 0x66, 0x48, 0xe8, 0x10, 0x00, 0x00, 0x00, 0xc3}
	in, err := Decode(code, 0x1000)
	if err != nil {
		t.Fatal(err)
	}
	if in.Len != 8 || in.Kind != Call || in.Target != 0x1018 {
		t.Fatalf("got len %d kind %v target %#x, want 8 call 0x1018", in.Len, in.Kind, in.Target)
	}
	// Without REX.W the length is vendor-dependent: refused.
	if _, err := Decode([]byte{0x66, 0xe8, 0, 0, 0, 0, 0, 0}, 0x1000); err == nil {
		t.Fatal("66 e8 without REX.W decoded; want a refusal")
	}
}
