import Foundation
import HearthFirestoreProto
import SwiftProtobuf
import Testing

/// `Write.verify = 5`: added by scripts/protos/firestore_descriptors.py because the Firebase Apple SDK sends it in
/// transactions and the Python package's schema lacks it. The bytes below are written out by hand from the
/// protobuf wire format (tag = field number << 3 | wire type 2).
@Suite struct WriteVerifyTests {
    static let name = "projects/p/databases/(default)/documents/rooms/r1"
    /// current_document (4) = Precondition{exists (1) = true}
    static let precondition: [UInt8] = [0x22, 0x02, 0x08, 0x01]
    /// verify (5) = name
    static var verify: [UInt8] { [0x2A, UInt8(name.utf8.count)] + Array(name.utf8) }

    @Test func verifyIsAnOperation() throws {
        // The Apple SDK's order: verify first, then the precondition.
        let write = try Google_Firestore_V1_Write(serializedBytes: Self.verify + Self.precondition)
        #expect(write.operation == .verify(Self.name))
        #expect(write.verify == Self.name)
        #expect(write.currentDocument.exists == true)
        #expect(write.unknownFields.data.isEmpty)
    }

    @Test func encodesVerify() throws {
        var write = Google_Firestore_V1_Write()
        write.verify = Self.name
        write.currentDocument.exists = true
        let bytes: [UInt8] = try write.serializedBytes()
        // swift-protobuf writes fields in field-number order.
        #expect(bytes == Self.precondition + Self.verify)
    }

    @Test func verifyReplacesAnotherOperation() throws {
        // A oneof keeps the last member on the wire: delete (2) then verify (5) decodes as verify.
        let delete: [UInt8] = [0x12, 0x01, 0x78]
        let write = try Google_Firestore_V1_Write(serializedBytes: delete + Self.verify)
        #expect(write.operation == .verify(Self.name))
    }
}
