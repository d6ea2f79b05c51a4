import Foundation
import HearthFirestoreProto
import Testing

@testable import HearthClientFirestore

/// How setData/updateData data becomes Firestore writes (the Apple SDK's user-data rules).
struct FirestoreUserDataTests {
    let reader = UserDataReader(databaseName: "projects/p/databases/(default)")
    let writer = UserDataWriter(databaseName: "projects/p/databases/(default)")

    func code(_ error: any Error) -> Int { (error as NSError).code }

    @Test func setDataWritesEveryValueTypeAndTurnsSentinelsIntoTransforms() throws {
        let parsed = try reader.parseSet([
            "s": "x", "i": 7, "big": Int64.max, "d": 1.5, "b": true, "n": NSNull(), "bytes": Data([1]),
            "t": Timestamp(seconds: 1, nanoseconds: 2), "g": GeoPoint(latitude: 1, longitude: 2),
            "r": DocumentReference(path: "users/alice"), "a": [1, "two", ["k": 3]], "m": ["inner": ["deep": false]],
            "createdAt": FieldValue.serverTimestamp(), "count": FieldValue.increment(Int64(2)), "tags": FieldValue.arrayUnion(["a", "b"]),
        ])
        #expect(parsed.mask == nil && !parsed.mustExist)
        #expect(parsed.fields["i"]?.integerValue == 7 && parsed.fields["big"]?.integerValue == .max)
        #expect(parsed.fields["d"]?.doubleValue == 1.5 && parsed.fields["b"]?.booleanValue == true)
        #expect(parsed.fields["r"]?.referenceValue == "projects/p/databases/(default)/documents/users/alice")
        #expect(parsed.fields["a"]?.arrayValue.values.count == 3)
        #expect(parsed.fields["createdAt"] == nil && parsed.fields["count"] == nil)
        #expect(parsed.transforms.map(\.fieldPath).sorted() == ["count", "createdAt", "tags"])
        // back to app data
        let data = writer.convert(parsed.fields)
        #expect(data["i"] as? Int64 == 7)
        #expect(data["t"] as? Timestamp == Timestamp(seconds: 1, nanoseconds: 2))
        #expect((data["r"] as? DocumentReference)?.path == "users/alice")
        #expect(((data["m"] as? [String: Any])?["inner"] as? [String: Any])?["deep"] as? Bool == false)
        #expect(data["n"] is NSNull)
    }

    @Test func deletesNeedMergeOrUpdateAndSentinelsStayOutOfArrays() {
        #expect(throws: (any Error).self) { try reader.parseSet(["x": FieldValue.delete()]) }
        #expect(throws: (any Error).self) { try reader.parseSet(["x": [FieldValue.serverTimestamp()]]) }
        #expect(throws: (any Error).self) { try reader.parseSet(["x": [[1]]]) }
        #expect(throws: (any Error).self) { try reader.parseSet(["": 1]) }
        #expect(throws: (any Error).self) { try reader.parseSet(["x": UInt64.max]) }
        struct Opaque {}
        do {
            _ = try reader.parseSet(["m": ["k": Opaque()]])
            Issue.record("an unsupported type was accepted")
        } catch {
            #expect((error as NSError).localizedDescription == "Invalid data. Unsupported type: Opaque (found in field m.k)")
            #expect(code(error) == FirestoreErrorCode.invalidArgument.rawValue)
        }
        #expect(throws: (any Error).self) { try reader.parseArgument(FieldValue.increment(Int64(1))) }
    }

    @Test func mergeSetMasksTheLeavesItWrites() throws {
        let parsed = try reader.parseMergeSet(["a": 1, "m": ["x": 2, "empty": [String: Any]()], "gone": FieldValue.delete(), "ts": FieldValue.serverTimestamp()])
        #expect(parsed.mask?.map(\.canonical).sorted() == ["a", "gone", "m.empty", "m.x"])
        #expect(parsed.transforms.map(\.fieldPath) == ["ts"])
        let only = try reader.parseMergeSet(["a": 1, "b": 2, "m": ["x": 1, "y": 2]], mergeFields: [FieldPath(["a"]), FieldPath(["m", "y"])])
        #expect(only.mask?.map(\.canonical) == ["a", "m.y"])
        #expect(only.fields.keys.sorted() == ["a", "m"])
        #expect(only.fields["m"]?.mapValue.fields.keys.sorted() == ["y"])
        #expect(throws: (any Error).self) { try reader.parseMergeSet(["a": 1], mergeFields: [FieldPath(["missing"])]) }
    }

    @Test func updateDataTakesDottedPathsAndRequiresTheDocument() throws {
        let parsed = try reader.parseUpdate([
            "address.city": "Berlin", FieldPath(["odd.key"]): 1, "removed": FieldValue.delete(), "n": FieldValue.increment(1.5),
        ])
        #expect(parsed.mustExist)
        #expect(parsed.mask?.map(\.canonical) == ["`odd.key`", "address.city", "removed"])
        #expect(parsed.fields["address"]?.mapValue.fields["city"]?.stringValue == "Berlin")
        #expect(parsed.fields["odd.key"]?.integerValue == 1)
        #expect(parsed.transforms.map(\.fieldPath) == ["n"])
        let write = parsed.write(name: "projects/p/databases/(default)/documents/c/d")
        #expect(write.currentDocument.exists == true)
        #expect(write.updateMask.fieldPaths == ["`odd.key`", "address.city", "removed"])
        #expect(throws: (any Error).self) { try reader.parseUpdate(["a": 1, "a.b": 2]) }
        #expect(throws: (any Error).self) { try reader.parseUpdate(["a..b": 1]) }
        #expect(throws: (any Error).self) { try reader.parseUpdate(["a/b": 1]) }
    }

    @Test func fieldPathsQuoteWhatIsNotAnIdentifier() {
        #expect(FieldPath(["a", "b_2"]).canonical == "a.b_2")
        #expect(FieldPath(["1a", "with space", "back`tick"]).canonical == "`1a`.`with space`.`back\\`tick`")
        #expect(FieldPath.documentID().canonical == "__name__")
    }
}
