import HearthFuzzTargets

// The fuzzing front end for `FuzzTargets`.
//
// Built by `scripts/fuzz` with `-sanitize=fuzzer,address -DHEARTH_LIBFUZZER`: libFuzzer owns
// `main` and calls `LLVMFuzzerTestOneInput`; `HEARTH_FUZZ_TARGET` names the target.
// In ordinary builds it is a small tool that lists the targets and replays saved inputs:
// `hearth-fuzz TARGET FILE...`.

#if HEARTH_LIBFUZZER
private let selected: FuzzTargets.Target = {
    let env = ProcessInfoLite.environment("HEARTH_FUZZ_TARGET") ?? ""
    guard let target = FuzzTargets.named(env) else {
        preconditionFailure("HEARTH_FUZZ_TARGET must be one of: \(FuzzTargets.all.map(\.name).joined(separator: ", "))")
    }
    return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size))
    selected.run(bytes)
    return 0
}

/// libFuzzer's driver, for programs that keep their own `main`.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// SwiftPM links an executable's `main` to `<module>_main`; here that hands over to libFuzzer
/// (so libFuzzer's own `main` is never pulled from its archive).
@_cdecl("hearth_fuzz_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return runFuzzerDriver(&count, &arguments, fuzzOneInput)
}
#else
@main
enum HearthFuzz {
    static func main() throws {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard let name = arguments.first, let target = FuzzTargets.named(name) else {
            print("usage: hearth-fuzz TARGET [FILE...]   (replays inputs; scripts/fuzz runs libFuzzer)\n\ntargets:")
            for t in FuzzTargets.all { print("  " + t.name + String(repeating: " ", count: max(1, 15 - t.name.count)) + t.summary) }
            return
        }
        for path in arguments.dropFirst() {
            let bytes = try ProcessInfoLite.contents(of: path)
            target.run(bytes)
            print("ok \(path)")
        }
    }
}
#endif
