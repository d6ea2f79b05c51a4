import Foundation

/// Base64 and base64url (no padding) as JWTs and Firebase's hash exports use them.
/// `decode` also accepts the URL-safe alphabet with or without padding (firebase-admin's imports).
public enum Base64 {
    public static func encode(_ bytes: some Collection<UInt8>) -> String { Data(bytes).base64EncodedString() }

    public static func decode(_ text: String) -> [UInt8]? {
        var t = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        let rem = t.utf8.count % 4
        if rem == 2 { t += "==" } else if rem == 3 { t += "=" }
        return Data(base64Encoded: t).map(Array.init)
    }

    public static func urlEncode(_ bytes: some Collection<UInt8>) -> String {
        var s = Data(bytes).base64EncodedString()
        s = s.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while s.hasSuffix("=") { s.removeLast() }
        return s
    }

    public static func urlDecode(_ text: some StringProtocol) -> [UInt8]? {
        guard text.utf8.allSatisfy({ $0 != UInt8(ascii: "=") && $0 != UInt8(ascii: "+") && $0 != UInt8(ascii: "/") }) else { return nil }
        return decode(text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/"))
    }
}
