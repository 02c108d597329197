#!/usr/bin/env bash
# Prints the manual page (roff) of one of the programs, made from its --help: the help text
# verbatim, as the program wraps it for man's text width (COLUMNS=76: ArgumentParser wraps there,
# so nothing is broken again mid-sentence), roff control characters escaped. Lines the program
# does not wrap itself (tetherd's paragraphs) are folded at spaces.
#
# Usage: Scripts/manpage.sh PROGRAM SECTION SUMMARY VERSION    (PROGRAM: the binary's path)
# Scripts/package.sh gzips its output into the package.
set -euo pipefail
program="$1" section="$2" summary="$3" version="$4"
name="$(basename "$program")"
upper="$(echo "$name" | tr '[:lower:]' '[:upper:]')"
date="$(date -u -d "@${SOURCE_DATE_EPOCH:-$(git -C "$(dirname "$0")" log -1 --format=%ct 2>/dev/null || date +%s)}" +%Y-%m-%d)"
echo ".TH $upper $section \"$date\" \"tether $version\" \"Tether\""
echo ".SH NAME"
echo "$name \\- $summary"
echo ".SH DESCRIPTION"
echo "The text of \\fB$name \\-\\-help\\fR:"
echo ".PP"
echo ".nf"
COLUMNS=76 "$program" --help | fold -s -w 76 | sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
echo ".fi"
echo ".SH SEE ALSO"
echo "/usr/share/doc/tether/OPERATIONS.md.gz, /usr/share/doc/tether/README.md.gz"
