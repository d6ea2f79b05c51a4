/// Checks that an object's first bytes look like its declared content type (the "magic
/// numbers" of each format), so an upload declared as `image/jpeg` that holds something else
/// is refused at `complete`.
public enum ContentSniffer {
    /// How many leading bytes ``matches(_:head:)`` needs.
    public static let headLength = 512

    /// Whether `head` (the object's first bytes, at most ``headLength``) fits `contentType`.
    /// Types without a known signature match anything.
    public static func matches(_ contentType: String, head: [UInt8]) -> Bool {
        switch contentType.lowercased() {
        case "image/jpeg": return head.starts(with: [0xFF, 0xD8, 0xFF])
        case "image/png": return head.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        case "image/gif": return head.starts(with: Array("GIF87a".utf8)) || head.starts(with: Array("GIF89a".utf8))
        case "image/webp": return head.starts(with: Array("RIFF".utf8)) && head.count >= 12 && Array(head[8..<12]) == Array("WEBP".utf8)
        case "application/pdf": return head.starts(with: Array("%PDF-".utf8))
        case "image/heic", "audio/mp4", "audio/x-m4a", "video/mp4", "video/quicktime":
            // ISO base media files (MP4, M4A, MOV, HEIC) start with a box whose type is `ftyp`.
            return head.count >= 12 && Array(head[4..<8]) == Array("ftyp".utf8)
        case "audio/mpeg":
            // An ID3 tag, or an MPEG audio frame sync (11 set bits).
            return head.starts(with: Array("ID3".utf8)) || (head.count >= 2 && head[0] == 0xFF && head[1] & 0xE0 == 0xE0)
        case "text/plain":
            // Text: no NUL bytes and valid UTF-8 (a character cut by the end of the head is fine).
            guard !head.contains(0) else { return false }
            for cut in 0...min(3, head.count) where String(validating: head.dropLast(cut), as: UTF8.self) != nil { return true }
            return false
        default:
            return true
        }
    }
}
