import Hummingbird
import NIOCore

/// The console's pages: plain HTML, CSS and JavaScript modules under `Console/Assets/`,
/// compiled into the binary by SwiftPM (`resources: [.embedInCode(…)]` in Package.swift), so the
/// console works offline and needs no build step, CDN or files beside the binary.
enum ConsoleAssets {
    struct Asset: Sendable {
        var bytes: [UInt8]
        var contentType: String
        /// A strong validator for `If-None-Match` (FNV-1a of the bytes).
        var etag: String
    }

    static let all: [String: Asset] = {
        let files: [(String, [UInt8])] = [
            ("index.html", PackageResources.index_html),
            ("console.css", PackageResources.console_css),
            ("console.js", PackageResources.console_js),
            ("api.js", PackageResources.api_js),
            ("dom.js", PackageResources.dom_js),
            ("values.js", PackageResources.values_js),
            ("page-overview.js", PackageResources.page_overview_js),
            ("page-firestore.js", PackageResources.page_firestore_js),
            ("page-database.js", PackageResources.page_database_js),
            ("page-auth.js", PackageResources.page_auth_js),
            ("page-storage.js", PackageResources.page_storage_js),
            ("page-rules.js", PackageResources.page_rules_js),
        ]
        var out: [String: Asset] = [:]
        for (name, bytes) in files {
            out[name] = Asset(bytes: bytes, contentType: contentType(name), etag: etag(bytes))
        }
        return out
    }()

    static func contentType(_ name: String) -> String {
        if name.hasSuffix(".html") { return "text/html; charset=utf-8" }
        if name.hasSuffix(".css") { return "text/css; charset=utf-8" }
        if name.hasSuffix(".js") { return "text/javascript; charset=utf-8" }
        return "application/octet-stream"
    }

    static func etag(_ bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes {
            hash ^= UInt64(b)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        return "\"" + String(hash, radix: 16) + "\""
    }
}
