#!/bin/sh
# `make demo`: build the bundled example with sonde's instrumentation, run it under sonde, and
# print the report; then search a traced run of a planted bottleneck (examples/consult_phases.c).
# Everything goes to build/demo/.
set -e
cd "$(dirname "$0")/.."
sonde=build/bin/sonde
out=build/demo
mkdir -p $out
echo "== sonde cc -- gcc -O2 -o $out/demo examples/demo.c"
$sonde cc -- gcc -O2 -o $out/demo examples/demo.c
echo "== sonde run -o $out/run -- $out/demo"
$sonde run -o $out/run -- $out/demo
echo "== sonde report $out/run --depth 4"
$sonde report $out/run --depth 4
echo "== sonde report --html $out/run -o $out/report.html"
$sonde report --html $out/run -o $out/report.html
echo "$out/report.html: $(wc -c < $out/report.html) bytes, one self-contained page (open it in a browser)"
# The bottleneck search over a trace: a planted bottleneck that changes mid-run (at 2, about
# 2.3 s: each phase long enough for the search to reach its procedure).
echo "== sonde cc -- gcc -O1 -g -o $out/phases examples/consult_phases.c"
$sonde cc -- gcc -O1 -g -o $out/phases examples/consult_phases.c
echo "== sonde run --trace -o $out/traced -- $out/phases 2"
$sonde run --trace -o $out/traced -- $out/phases 2
echo "== sonde consult $out/traced"
$sonde consult $out/traced > $out/consult.txt
sed -n '/^Bottlenecks/,$p' $out/consult.txt
echo "== sonde report --html $out/traced -o $out/search.html"
$sonde report --html $out/traced -o $out/search.html
echo "$out/search.html: $(wc -c < $out/search.html) bytes: the same page for the traced run, with its timeline and search graph"
