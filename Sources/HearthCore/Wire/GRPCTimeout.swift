/// The `grpc-timeout` request header: at most 8 digits and a unit (`H`, `M`, `S`, `m`, `u`,
/// `n`), as the gRPC HTTP/2 protocol defines it. The largest value (99,999,999 hours) fits a
/// `Duration`, so nothing here can overflow. Nil when malformed.
public enum GRPCTimeout {
    public static func parse(_ text: String) -> Duration? {
        guard let unit = text.last, text.utf8.count >= 2, text.utf8.count <= 9,
            let n = WireInteger.parse(text.dropLast(), in: 0...99_999_999)
        else { return nil }
        switch unit {
        case "H": return .seconds(n * 3600)
        case "M": return .seconds(n * 60)
        case "S": return .seconds(n)
        case "m": return .milliseconds(n)
        case "u": return .microseconds(n)
        case "n": return .nanoseconds(n)
        default: return nil
        }
    }
}
