// Package docs holds the twelve document tools of the PM and the Architect
// (the PRD and SDD sites and their archive): bootstrap_prd_site, bootstrap_sdd_site,
// write_chapter, write_mvcp_page, archive_doc, diff_html, diff_units,
// echo_diff, update_search_index, validate_prd_site,
// validate_sdd_consistency and hash_contract.
//
// A site (prd/ or sdd/) is static HTML generated from the templates embedded
// here: index.html, one page per chapter whose <article class="body"> holds
// the agent's HTML, assets/shell.css and assets/shell.js, site.json and the
// search index. Because Chromium refuses fetch() of local files, site.json
// and search-index.json each have a JavaScript twin (site-data.js,
// search-index.js) that pages load with <script src>, so a site works from
// file:// as well as from a static server, with no network access.
//
// HTML is only ever handled through a parser (golang.org/x/net/html), never
// with regular expressions. Agent HTML is sanitised before it is stored.
// Every top-level <section> of an article is a unit with a stable data-unit,
// so versions can be compared unit by unit.
//
// Tools here never write with os: every write goes through the agent's
// sandbox door (c.Files), which decides what the agent may touch (the PM
// prd/**, the Architect sdd/** and contracts/**). They never check
// permissions or paths themselves. Contract hashes come from
// internal/contract, the project's one hash function.
package docs
