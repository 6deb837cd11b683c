// Package visible renders text that agents or callers wrote for a human to
// read — a terminal table, an approval question, a card on the dashboard —
// so that nothing in it is invisible or changes how the rest reads: control
// characters, bidirectional controls (U+202E, U+2066–U+2069, U+200F …) and
// other format characters (zero-width spaces and joiners, U+FEFF, tag
// characters), line and paragraph separators and invalid UTF-8 are shown
// as escapes (\u202e, \x1b, \xff) instead of acting on the text.
//
// It decides nothing: it only changes how text is shown, never what is
// stored or what runs. The dashboard's page applies the same rule in its
// script (assets/app.js), where its text is put into the page.
package visible
