package rewriter

import (
	"os"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/rewriter/elfw"
	"github.com/blpp/blpp/runtime"
)

// TestKeepCETRuntimeWithoutIBT: where the runtime image's hooks do not
// start with endbr64 (an image built without -fcf-protection), keepCET
// clears IBT, keeps SHSTK and says why; with the committed image it
// changes nothing (decision 95).
func TestKeepCETRuntimeWithoutIBT(t *testing.T) {
	orig := fixture.Build(t, "switch.c", fixture.Config{CC: "gcc", Opt: "-O2", PIE: true, Extra: []string{"-fcf-protection=full", "-Wl,-z,ibt,-z,shstk"}})
	in, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	cm := cetOf(in, Options{})
	if !cm.ibt || cm.feat&(x86FeatureIBT|x86FeatureSHSTK) != x86FeatureIBT|x86FeatureSHSTK {
		t.Fatalf("cetOf: %+v, want IBT and SHSTK", cm)
	}
	img, err := runtime.Load()
	if err != nil {
		t.Fatal(err)
	}
	pcs, w := keepCET(elfw.Whole(append([]byte(nil), in...)), img, cm)
	if out := pcs.Bytes(); len(w) != 0 || cetOf(out, Options{}).feat != cm.feat {
		t.Fatalf("committed image: warnings %q, bits %#x", w, cetOf(out, Options{}).feat)
	}
	off := img.Symbols[runtime.SymFini]
	copy(img.Text[off:], []byte{0x0f, 0x1f, 0x40, 0x00})
	pcs, w = keepCET(pcs, img, cm)
	if len(w) != 1 || !strings.Contains(w[0], runtime.SymFini) {
		t.Errorf("warnings %q, want one naming %s", w, runtime.SymFini)
	}
	if got := cetOf(pcs.Bytes(), Options{}).feat; got&x86FeatureIBT != 0 || got&x86FeatureSHSTK == 0 {
		t.Errorf("bits after %#x, want IBT cleared and SHSTK kept", got)
	}
}
