import HearthCore
@testable import HearthAuth

func hex(_ s: String) -> [UInt8] {
    let digits = Array(s.filter { !$0.isWhitespace })
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0..<$0 + 2]), radix: 16)! }
}

func b64(_ s: String) -> [UInt8] { Base64.decode(s)! }

/// Expects `body` to throw a HearthError carrying Firebase's `code`.
func expectAuthError<T>(_ code: AuthErrorCode, _ body: () async throws -> T, sourceLocation: SourceLocation = #_sourceLocation) async {
    do {
        _ = try await body()
        Issue.record("expected \(code.rawValue), got success", sourceLocation: sourceLocation)
    } catch let e as HearthError {
        #expect(e.authErrorCode == code, "got \(e.message)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected \(code.rawValue), got \(error)", sourceLocation: sourceLocation)
    }
}

import Testing
import Synchronization

/// A clock tests move by hand.
final class TestClock: Sendable {
    let now = Mutex<Int64>(1_700_000_000_000)
    var clock: AuthClock { AuthClock { [self] in now.withLock { $0 } } }
    func advance(seconds: Int64) { now.withLock { $0 += seconds * 1000 } }
    var seconds: Int64 { now.withLock { $0 } / 1000 }
}

/// Shared RSA keys: generating 2048-bit keys is slow in debug builds.
let sharedRing: KeyRing = try! KeyRing(directory: nil, policy: .init(rotationInterval: 1_000_000_000), clock: .system)
