#!/bin/sh
# `make demo`: build the bundled example with sonde's instrumentation, run it under sonde, and
# print the report. Everything goes to build/demo/.
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
