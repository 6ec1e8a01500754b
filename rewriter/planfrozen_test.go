package rewriter

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestPlanReadOnlyWhileEmitting: the emitter (methods of *funcGen) reads
// the function's plan and never writes it. No method of *funcGen assigns
// to a field of the embedded funcPlan, or to an element of one (a map or
// slice entry), or increments one; planning is the job of the methods of
// *funcPlan and of gen's planners (plan.go, planloops.go).
func TestPlanReadOnlyWhileEmitting(t *testing.T) {
	planField := map[string]bool{}
	pt := reflect.TypeOf(funcPlan{})
	for i := 0; i < pt.NumField(); i++ {
		planField[pt.Field(i).Name] = true
	}
	gt := reflect.TypeOf(funcGen{})
	for i := 0; i < gt.NumField(); i++ {
		delete(planField, gt.Field(i).Name) // funcGen's own (and the embedding)
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	methods := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || len(fd.Recv.List) != 1 || len(fd.Recv.List[0].Names) != 1 {
				continue
			}
			star, ok := fd.Recv.List[0].Type.(*ast.StarExpr)
			if !ok { // a value receiver
				continue
			}
			if id, ok := star.X.(*ast.Ident); !ok || id.Name != "funcGen" {
				continue
			}
			methods++
			recv := fd.Recv.List[0].Names[0].Name
			// written reports the plan field that expression x (an
			// assignment's target) writes, if any: recv.field,
			// recv.funcPlan.field, and entries of either.
			written := func(x ast.Expr) string {
				for {
					switch e := x.(type) {
					case *ast.IndexExpr:
						x = e.X
						continue
					case *ast.ParenExpr:
						x = e.X
						continue
					case *ast.SelectorExpr:
						base := e.X
						if s, ok := base.(*ast.SelectorExpr); ok && s.Sel.Name == "funcPlan" {
							base = s.X
						}
						if id, ok := base.(*ast.Ident); ok && id.Name == recv && planField[e.Sel.Name] {
							return e.Sel.Name
						}
					}
					return ""
				}
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				var targets []ast.Expr
				switch s := n.(type) {
				case *ast.AssignStmt:
					targets = s.Lhs
				case *ast.IncDecStmt:
					targets = []ast.Expr{s.X}
				}
				for _, x := range targets {
					if fld := written(x); fld != "" {
						t.Errorf("%s: (*funcGen).%s writes the plan's %s: plan it in plan.go instead",
							fset.Position(x.Pos()), fd.Name.Name, fld)
					}
				}
				return true
			})
		}
	}
	if methods < 50 || len(planField) < 20 {
		t.Fatalf("found %d funcGen methods and %d plan fields: the test has lost its target", methods, len(planField))
	}
}
