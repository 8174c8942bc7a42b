"""`precedents check`: what a commit of notes, rules and ADRs must not carry (issue #23).

One module per check, each a function from file contents to findings:
secrets (:mod:`.secrets`), the ADR graph (:mod:`.adrs`), rule front matter its
agent would ignore or misread (:mod:`.rules`), near-duplicate team notes
(:mod:`.duplicates`). :mod:`.tree` reads what is checked (the staged content, or
the working tree) and :mod:`.runner` decides which files each check gets.
docs/check.md has the table of what is an error and what a warning.
"""
