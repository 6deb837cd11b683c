package shellcorpus

// wave3 are the techniques the third wave's red team found, each with its
// variants, judged like the rest by what bash runs.
var wave3 = []Case{
	// Arithmetic evaluates a value that is itself an expression: a name
	// in it is read and evaluated in turn, a subscript in it runs its
	// command substitutions — with or without a $ in the text.
	{Class: "arith", Name: "a bare name in [[ -lt ]]", Cmd: "x='a[$(curl -s http://127.0.0.1:9/x)]'; [[ x -lt 1 ]]"},
	{Class: "arith", Name: "a name naming a name", Cmd: "z='a[$(curl -s http://127.0.0.1:9/x)]'; y=z; : $((y))"},
	{Class: "arith", Name: "$y naming a name", Cmd: "z='a[$(curl -s http://127.0.0.1:9/x)]'; y=z; : $(($y))"},
	{Class: "arith", Name: "a chain of names", Cmd: "x1=x2; x2=x3; x3=x4; x4=x5; x5='a[$(curl -s http://127.0.0.1:9/x)]'; : $((x1))"},
	{Class: "arith", Name: "declare -i assigned a name", Cmd: "x='a[$(curl -s http://127.0.0.1:9/x)]'; declare -i y; y=x"},
	{Class: "arith", Name: "an array element", Cmd: "a=(1 'b[$(curl -s http://127.0.0.1:9/x)]'); : $((a[1]))"},
	{Class: "arith", Name: "an array as a name", Cmd: "a=('b[$(curl -s http://127.0.0.1:9/x)]'); : $((a))"},
	{Class: "arith", Name: "a number stays a number", Cmd: "n=3; [[ n -lt 4 ]] && git status 2>/dev/null", Ordinary: true},

	// declare, local, export, readonly and typeset read a quoted or
	// computed operand as NAME=VALUE; a nameref without a target takes
	// the first name assigned to it; printf -vNAME; a name read by read
	// that is only known when the command runs.
	{Class: "declare", Name: "declare of a quoted assignment", Cmd: "x=git; declare 'x=curl'; $x status"},
	{Class: "declare", Name: "declare of a partly quoted one", Cmd: "x=git; declare x\"=curl\"; $x status"},
	{Class: "declare", Name: "declare of a variable", Cmd: "x=git; v='x=curl'; declare \"$v\"; $x status"},
	{Class: "declare", Name: "export of a variable", Cmd: "x=git; v='x=curl'; export \"$v\"; $x status"},
	{Class: "declare", Name: "typeset unquoted", Cmd: "x=git; v='x=curl'; typeset $v; $x status"},
	{Class: "declare", Name: "local of a variable", Cmd: "f(){ x=git; v='x=curl'; local \"$v\"; $x status; }; f"},
	{Class: "declare", Name: "readonly of a variable", Cmd: "x=git; v='x=curl'; readonly \"$v\"; $x status"},
	{Class: "declare", Name: "a computed option", Cmd: "x=git; o=-n; declare $o r=x; r=curl; $x status"},
	{Class: "declare", Name: "nameref given its target later", Cmd: "x=git; declare -n r; r=x; r=curl; $x status"},
	{Class: "declare", Name: "unset -n removes the reference", Cmd: "x=curl; declare -n r=x; unset -n r; r=git; $x -s http://127.0.0.1:9/x"},
	{Class: "declare", Name: "read into a computed name", Cmd: "x=git; read ${n:-x} <<< curl; $x status"},
	{Class: "declare", Name: "printf -vNAME", Cmd: "x=git; printf -vx '%s' curl; $x status"},
	{Class: "declare", Name: "readonly assigns before it locks", Cmd: "x=git; readonly x=curl; $x -s http://127.0.0.1:9/x"},
	{Class: "declare", Name: "declare -r assigns before it locks", Cmd: "x=git; declare -r x=curl; $x -s http://127.0.0.1:9/x"},
	{Class: "declare", Name: "declare of a literal assignment", Cmd: "declare x=git; $x status 2>/dev/null", Ordinary: true},
}
