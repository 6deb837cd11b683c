package bashguard

import "strings"

// dynamic handles a command whose program name is computed at run time:
// it may be any program. The guard refuses it when, were it an HTTP
// client, it would be handed inline JSON, or, were it a shell, the code
// it would be given would be refused.
func (c *checker) dynamic(fields []string, o runOpts) stream {
	idx := c.recordCall("", "", fields)
	c.a.Commands[idx].Dynamic = true
	c.programMayWrite()
	what := shown(fields[0])
	if strings.ContainsRune(fields[0], markDerived) {
		c.unknown(Unknown{Kind: UnknownProgram, What: what, Reason: "the program's name (" + what + ") is made at run time from text of the command",
			Instead: dynamicInstead, ReachesHTTP: true, ReachesShell: true})
		return nil
	}
	c.mayBeAnything(fields, what, "the program's name ("+what+") is computed at run time")
	return stream{{kind: segProgram, via: "the output of " + what}}
}

const dynamicInstead = "write the program's name literally (curl …, not \"$(which curl)\" or \"$CMD\"), and pass JSON bodies from a file (curl -d @file)"

// mayBeAnything checks a command whose program may be any program (its
// name computed at run time, a file the agent may have written): the
// guard refuses it when, were it an HTTP client, it would be handed
// inline JSON, or, were it a shell, the code it would be given would be
// refused. It reports whether it refused.
func (c *checker) mayBeAnything(fields []string, what, why string) bool {
	instead := dynamicInstead
	if !strings.Contains(why, "computed") {
		instead = "run a program the agent cannot change (one on PATH outside the writable directories), and pass JSON bodies from a file (curl -d @file)"
	}
	// As an HTTP client: JSON in its arguments or input.
	if p, via, ok := anyJSON(fields[1:], c.in.rest()); ok {
		c.unknown(Unknown{Kind: UnknownProgram, What: what, Reason: why + " and it is handed JSON (" + shown(p) + ") via " + via,
			Instead: instead, ReachesHTTP: true})
		return true
	}
	// As a shell: the code in its arguments or input.
	for _, a := range fields[1:] {
		if !strings.ContainsAny(a, " \t\n;|&") {
			continue
		}
		if c.hypothesis(func() { c.code(a, what, []string{what}, -1) }) {
			c.unknown(Unknown{Kind: UnknownProgram, What: what, Reason: why + ", and were it a shell, the code it is given would be refused",
				Instead: instead, ReachesShell: true})
			return true
		}
	}
	in := c.in.rest()
	if len(in) > 0 && c.hypothesis(func() {
		c.in = &reader{}
		for _, g := range in {
			if g.kind == segText && !g.json {
				c.code(g.text, what, []string{what}, -1)
			}
		}
	}) {
		c.unknown(Unknown{Kind: UnknownProgram, What: what, Reason: why + ", and were it a shell, the script on its input would be refused",
			Instead: instead, ReachesShell: true})
		return true
	}
	return false
}

// hypothesis runs fn on a scratch analysis, in a world thrown away
// afterwards, and reports whether the guard would refuse what fn found.
func (c *checker) hypothesis(fn func()) bool {
	saved := c.a
	c.a = &Analysis{}
	c.hypo++
	c.deferredRun(fn)
	c.hypo--
	refused := c.a.Verdict() != nil
	c.a = saved
	return refused
}

// anyJSON finds inline JSON in arguments (whole, after a "=", in a URL
// query) or input, as any HTTP client would take it.
func anyJSON(args []string, in stream) (payload, via string, ok bool) {
	for _, a := range args {
		if isJSONValue(a) {
			return a, "an argument", true
		}
		if _, v, ok := strings.Cut(a, "="); ok && isJSONValue(v) {
			return v, "an argument", true
		}
		if _, v, ok := queryJSON(a); ok {
			return v, "a URL query", true
		}
	}
	for _, g := range in {
		if p, ok := g.jsonPayload(); ok {
			return p, g.via, true
		}
	}
	return "", "", false
}
