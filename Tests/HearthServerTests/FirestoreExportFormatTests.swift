import Foundation
import HearthCore
import Testing

@testable import HearthServer

/// `output-0` of the Firestore emulator's export (emulator 1.19.9) of two documents written over
/// REST: `c/d1` with every value type and `c/d1/sub/e1` with `{x: 1}`.
private let emulatorOutput: [UInt8] = {
    let hex = [
        "7d5251114000016a276a0f6465767e64656d6f2d68656172746872140b120163220264310c0b1203737562220265310c7a091a017820002a02080182",
        "01090b120163220264310c6fcb757a4e01016a1c6a0f6465767e64656d6f2d68656172746872090b120163220264310c720a08181a02656120002a00",
        "7a071a016e20002a007a091a016220002a0210017a121a016920002a0b08d6ffffffffffffffff017a101a016620002a0921000000000000f83f7a12",
        "1a036e616e20002a0921000000000000f87f7a1208071a017420002a090880ebbe82dcbd83037a0f1a017320002a081a0668c3a96c6c6f7a0f080e1a",
        "017920002a061a04000102ff7a241a017220002a1d636a0f6465767e64656d6f2d686561727468737a01638a0102643274647a1d08091a016720002a",
        "142b31000000000000f83f3900000000000002c02c7a091a016120012a0208017a0a1a016120012a031a01787a1f08131a016d20002a161a146a046a",
        "0072007a091a016b20002a0208078201007a1508131a02656d20002a0b1a096a046a0072008201008201090b120163220264310c",
    ].joined()
    var out: [UInt8] = []
    var i = hex.startIndex
    while i < hex.endIndex {
        let j = hex.index(i, offsetBy: 2)
        out.append(UInt8(hex[i..<j], radix: 16)!)
        i = j
    }
    return out
}()

@Suite struct FirestoreExportFormatTests {
    @Test func theEmulatorsExportDecodesToEveryValueType() throws {
        let records = try FirestoreExportFormat.records(emulatorOutput)
        #expect(records.count == 2)
        let sub = try FirestoreExportFormat.entity(records[0])
        #expect(sub == .init(path: ["c", "d1", "sub", "e1"], fields: ["x": .integer(1)]))
        let d1 = try FirestoreExportFormat.entity(records[1])
        #expect(d1.path == ["c", "d1"])
        let f = d1.fields
        #expect(f["n"] == .null && f["b"] == .boolean(true) && f["i"] == .integer(-42) && f["f"] == .double(1.5))
        if case .double(let nan)? = f["nan"] { #expect(nan.isNaN) } else { Issue.record("nan: \(String(describing: f["nan"]))") }
        #expect(f["t"] == .timestamp(Timestamp(seconds: 1_704_164_645, nanos: 123_456_000)))
        #expect(f["s"] == .string("héllo") && f["y"] == .bytes([0, 1, 2, 255]))
        #expect(f["r"] == .reference("projects/demo-hearth/databases/(default)/documents/c/d2"))
        #expect(f["g"] == .geoPoint(latitude: 1.5, longitude: -2.25))
        #expect(f["a"] == .array([.integer(1), .string("x")]))
        #expect(f["m"] == .map(["k": .integer(7)]) && f["em"] == .map([:]) && f["ea"] == .array([]))
        #expect(f.count == 14)
    }

    @Test func writtenRecordsDecodeToTheSameDocument() throws {
        let entity = FirestoreExportFormat.Entity(path: ["users", "u1", "posts", "p9"], fields: [
            "n": .null, "b": .boolean(false), "i": .integer(.min), "d": .double(-0.0), "t": .timestamp(Timestamp(seconds: -1, nanos: 500_000_000)),
            "s": .string(String(repeating: "é", count: 2000)), "y": .bytes([]), "r": .reference("projects/p2/databases/(default)/documents/a/b/c/d"),
            "g": .geoPoint(latitude: -90, longitude: 180), "a": .array([.map(["q": .array([.null, .bytes([9])])]), .timestamp(Timestamp(seconds: 0, nanos: 0))]),
            "m": .map(["inner": .map(["deep": .string("x"), "e": .array([])])]), "ea": .array([]),
        ])
        let back = try FirestoreExportFormat.entity(FirestoreExportFormat.record(entity, project: "demo-hearth"))
        #expect(back == entity)
        if case .double(let z)? = back.fields["d"] { #expect(z.sign == .minus) }
    }

    @Test func logFilesRoundTripAcrossBlocks() throws {
        let records: [[UInt8]] = [[1, 2, 3], [UInt8](repeating: 7, count: 70_000), [], [UInt8](repeating: 8, count: 32_761)]
        let file = FirestoreExportFormat.logFile(records)
        #expect(try FirestoreExportFormat.records(file) == records)
        #expect(try FirestoreExportFormat.records(Array(emulatorOutput)) .count == 2)
    }

    @Test func damagedFilesAreRefused() {
        var flipped = emulatorOutput
        flipped[40] ^= 1
        #expect(throws: FirestoreExportFormat.Failure.self) { try FirestoreExportFormat.records(flipped) }
        #expect(throws: FirestoreExportFormat.Failure.self) { try FirestoreExportFormat.records(Array(emulatorOutput.dropLast(3))) }
        #expect(throws: FirestoreExportFormat.Failure.self) { try FirestoreExportFormat.entity([0x7a, 0x05, 0x1a]) }
        #expect(throws: FirestoreExportFormat.Failure.self) { try FirestoreExportFormat.entity([0x0b, 0x12, 0x01, 0x63]) }
    }
}
