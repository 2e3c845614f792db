package repair

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/axpool/axpool/compiler"
)

// bigFaulty is a generated program of n functions, each with a
// non-exhaustive match, an undefined-name typo and an unknown field.
func bigFaulty(n int) []byte {
	var b strings.Builder
	b.WriteString("enum Color { Red, Green, Blue }\ntype Point { x: Int, y: Int }\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "fn f%d(c: Color, p: Point) -> Point {\n    let total = p.x + %d\n    match c {\n        Red => Point { x: totl, yy: p.y },\n    }\n}\n", i, i)
	}
	b.WriteString("fn main() -> Int { f0(Color::Red, Point { x: 1, y: 2 }).x }\n")
	return []byte(b.String())
}

func BenchmarkDiagnoseSmall(b *testing.B) {
	src, err := os.ReadFile("testdata/repair/07_three_faults.ax")
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		Diagnose(src, compiler.Options{})
	}
}

func BenchmarkRepairSmall(b *testing.B) {
	src, err := os.ReadFile("testdata/repair/07_three_faults.ax")
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		if _, err := Repair(src, compiler.Options{}, "", ""); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRepair200Functions(b *testing.B) {
	src := bigFaulty(200)
	b.SetBytes(int64(len(src)))
	for i := 0; i < b.N; i++ {
		res, err := Repair(src, compiler.Options{}, "", "")
		if err != nil || !res.VerifyPassed {
			b.Fatalf("%v %+v", err, res.After)
		}
	}
}
