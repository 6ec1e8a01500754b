package rewriter

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/rewriter/enc"
)

// Every byte the code generator emits comes from an enc template that
// enc's as_test.go checks against GNU as (STYLE rule 11). Two guards keep
// it so.

// TestBufTakesNoRawBytes: the type system. No exported method of
// *enc.Buf accepts bytes, except the ones that copy an original
// instruction and check the bytes against its decoding (they take the
// *x86.Info too). A Bytes([]byte) method put back fails here.
func TestBufTakesNoRawBytes(t *testing.T) {
	bt := reflect.TypeOf(&enc.Buf{})
	byteSlice, inst := reflect.TypeOf([]byte(nil)), reflect.TypeOf(&x86.Info{})
	for i := 0; i < bt.NumMethod(); i++ {
		m := bt.Method(i)
		takesBytes, takesInst := false, false
		for j := 1; j < m.Type.NumIn(); j++ {
			switch m.Type.In(j) {
			case byteSlice:
				takesBytes = true
			case inst:
				takesInst = true
			}
		}
		if takesBytes && !takesInst {
			t.Errorf("enc.Buf.%s takes raw bytes: emit through a template checked against GNU as instead", m.Name)
		}
	}
}

// TestNoHandAssembledBytes: the source. No non-test Go file of package
// rewriter holds a byte-slice or byte-array literal with elements
// ([]byte{0xe9}, [5]byte{...}): machine code is built by enc templates
// (enc.JmpRel32At for the entry patches), data by the typed records of
// package runtime.
func TestNoHandAssembledBytes(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	n := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		n++
		ast.Inspect(f, func(nd ast.Node) bool {
			cl, ok := nd.(*ast.CompositeLit)
			if !ok || len(cl.Elts) == 0 {
				return true
			}
			if at, ok := cl.Type.(*ast.ArrayType); ok {
				if id, ok := at.Elt.(*ast.Ident); ok && (id.Name == "byte" || id.Name == "uint8") {
					t.Errorf("%s: hand-assembled byte literal: use an enc template", fset.Position(cl.Pos()))
				}
			}
			return true
		})
	}
	if n == 0 {
		t.Fatal("no source files found")
	}
}
