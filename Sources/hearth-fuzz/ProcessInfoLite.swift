#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The two things the fuzz front end needs from the system, without Foundation (which the
/// fuzzing build would otherwise instrument and link).
enum ProcessInfoLite {
    static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    struct ReadError: Error, CustomStringConvertible {
        let path: String
        var description: String { "cannot read \(path)" }
    }

    static func contents(of path: String) throws -> [UInt8] {
        guard let file = fopen(path, "rb") else { throw ReadError(path: path) }
        defer { fclose(file) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = fread(&buffer, 1, buffer.count, file)
            if n > 0 { out.append(contentsOf: buffer[0..<n]) }
            if n < buffer.count { break }
        }
        return out
    }
}
