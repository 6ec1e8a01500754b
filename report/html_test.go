package report

// The HTML page of the synthetic profile of export_test.go: well-formed
// XML (XHTML-style), with the hot paths, the procedures, the tree as
// nested <details>, and the SVG the renderer returns inline.

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
)

// checkXHTML parses page as XML and returns the element names it holds.
func checkXHTML(t *testing.T, page string) map[string]int {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(page))
	seen := map[string]int{}
	depth := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, page)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			seen[x.Name.Local]++
			depth++
		case xml.EndElement:
			depth--
		}
	}
	if depth != 0 {
		t.Fatalf("unbalanced elements (depth %d)", depth)
	}
	return seen
}

func TestHTMLPage(t *testing.T) {
	m := exModel(t, false)
	h, err := MakeHotPaths(m, "", DefaultHotShare)
	if err != nil {
		t.Fatal(err)
	}
	var dots []string
	render := func(dot []byte) ([]byte, error) {
		dots = append(dots, string(dot))
		return []byte(`<?xml version="1.0"?>` + "\n" + `<svg xmlns="http://www.w3.org/2000/svg"><g><text>cfg</text></g></svg>`), nil
	}
	for _, r := range []func([]byte) ([]byte, error){nil, render} {
		var buf bytes.Buffer
		if err := HTML(&buf, m, HTMLOptions{Hot: h, Render: r}); err != nil {
			t.Fatal(err)
		}
		page := buf.String()
		seen := checkXHTML(t, page)
		for _, want := range []string{"<code>main/work</code>", "<code>work</code>", "<code>main</code>", "Hot paths", "Calling-context tree", "dense"} {
			if !strings.Contains(page, want) {
				t.Errorf("page lacks %q", want)
			}
		}
		if seen["details"] == 0 || seen["summary"] == 0 || seen["table"] != 3 {
			t.Errorf("elements %v", seen)
		}
		if r == nil && (seen["svg"] != 0 || !strings.Contains(page, "graphviz")) {
			t.Errorf("without a renderer: %d svg, or no word of graphviz", seen["svg"])
		}
		if r != nil && (seen["svg"] != 2 || strings.Contains(page, "<?xml")) {
			t.Errorf("with a renderer: %d svg (want 2: main and work)", seen["svg"])
		}
	}
	if len(dots) != 2 || !strings.Contains(dots[0], "digraph") {
		t.Errorf("rendered %d graphs", len(dots))
	}
}
