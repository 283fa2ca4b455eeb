# Shared by run-short.sh and run-long.sh: checks that the toolchain can build libFuzzer targets,
# builds the fuzz package (release, libFuzzer + AddressSanitizer) and lists the targets.
# Sourced; sets FUZZ_DIR, FUZZ_BIN and FUZZ_TARGETS, or exits 77 (skip) / 1 (fail).

FUZZ_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$FUZZ_DIR/../.." && pwd)

# SwiftPM names a path dependency after its directory; a checkout directory called "fuzz" would
# collide with this package's own identity (Tests/Fuzz).
if [[ ${repo_root##*/} == [Ff][Uu][Zz][Zz] ]]; then
    echo "skipped: the checkout directory is named '${repo_root##*/}', which SwiftPM confuses with the fuzz package (Tests/Fuzz); clone into another directory name"
    exit 77
fi

# libFuzzer ships with the Linux Swift toolchains but not with Xcode's: probe it once.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '@_cdecl("LLVMFuzzerTestOneInput") public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt { 0 }\n' > "$probe/probe.swift"
if ! probe_output=$(swiftc -sanitize=fuzzer,address -parse-as-library "$probe/probe.swift" -o "$probe/probe" 2>&1); then
    echo "skipped: this Swift toolchain cannot build libFuzzer targets (swiftc -sanitize=fuzzer,address failed):"
    echo "$probe_output" | head -5
    exit 77
fi

build_start=$SECONDS
if ! swift build --package-path "$FUZZ_DIR" -c release --sanitize fuzzer --sanitize address; then
    echo "FAILED: the fuzz package does not build"
    exit 1
fi
echo "fuzz package built in $((SECONDS - build_start)) s"
# SwiftPM's link to the release products of the host triple.
FUZZ_BIN="$FUZZ_DIR/.build/release"
FUZZ_TARGETS=()
for source in "$FUZZ_DIR"/Sources/*/; do
    FUZZ_TARGETS+=("$(basename "$source")")
done

# Runs one target: fuzz_target NAME WORK_CORPUS LIBFUZZER_OPTIONS...; prints libFuzzer's final
# stats and returns 0 if it ended without a finding. The committed seeds (Corpus/NAME) are read,
# never written: new inputs go to WORK_CORPUS, findings to WORK_CORPUS/../NAME-artifacts/.
fuzz_target() {
    local name=$1 work=$2; shift 2
    local artifacts="$work/../$name-artifacts"
    mkdir -p "$work" "$artifacts"
    # libFuzzer's own exit codes (77 for a finding, 70 for a timeout) are mapped to 1 by callers,
    # so that they never read as "skipped".
    "$FUZZ_BIN/$name" "$@" -print_final_stats=1 -artifact_prefix="$artifacts/" \
        "$work" "$FUZZ_DIR/Corpus/$name" > "$work/../$name.log" 2>&1
    local status=$?
    grep -E '^(stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb|#[0-9]+ +DONE)' "$work/../$name.log"
    if ((status != 0)); then
        echo "$name: FINDING (libFuzzer exit status $status); log tail:"
        tail -40 "$work/../$name.log"
        ls -l "$artifacts"
        return 1
    fi
    return 0
}

# Executions a finished run reported.
executions() {
    sed -n 's/^stat::number_of_executed_units: *//p' "$1" | tail -1
}
