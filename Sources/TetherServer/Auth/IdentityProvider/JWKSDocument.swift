import Foundation
import JWTKit

/// A JWKS document turned into verification keys, one by one: a key tetherd cannot use (an `oct`
/// secret, an encryption key, an unknown curve, no `kid`) is skipped and named, never fatal to
/// the others. jwt-kit makes each key (`JWTKeyCollection.add(jwk:)`); the collection is used for
/// that alone: one per key, no default key, never `iteratingKeys` (docs/DESIGN.md).
enum JWKSDocument {
    /// More keys than any provider publishes (they hold 2-4 while rotating).
    static let maxKeys = 64

    struct Loaded {
        var keys: [String: VerificationKey] = [:]
        /// "kid: why" for each key left out.
        var skipped: [String] = []
    }

    static func load(_ body: [UInt8]) async throws(JWKSError) -> Loaded {
        guard let document = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
              let entries = document["keys"] as? [[String: Any]] else {
            throw JWKSError("not a JWKS document (a JSON object with a \"keys\" list)")
        }
        guard entries.count <= maxKeys else { throw JWKSError("\(entries.count) keys, more than the \(maxKeys) accepted") }
        var loaded = Loaded()
        for entry in entries {
            let kid = entry["kid"] as? String
            let name = kid ?? "(no kid)"
            do throws(JWKSError) {
                guard let kid, !kid.isEmpty else { throw JWKSError("no kid: tokens could not name it") }
                guard loaded.keys[kid] == nil else { throw JWKSError("a second key with this kid") }
                loaded.keys[kid] = try await key(entry, kid: kid)
            } catch {
                loaded.skipped.append("\(name): \(error.description)")
            }
        }
        return loaded
    }

    private static func key(_ entry: [String: Any], kid: String) async throws(JWKSError) -> VerificationKey {
        let kty = entry["kty"] as? String ?? "?"
        // A shared secret has no place in a public key set: checking tokens with it would let
        // anyone who read the set sign them.
        guard kty != "oct" else { throw JWKSError("an oct (shared secret) key; only public keys are taken") }
        if let use = entry["use"] as? String, use != "sig" { throw JWKSError("a key for \(use), not for signatures") }
        guard let alg = (entry["alg"] as? String) ?? defaultAlgorithm(kty: kty, crv: entry["crv"] as? String) else {
            throw JWKSError("key type \(kty) is not accepted (RSA, EC P-256/384/521, OKP Ed25519)")
        }
        guard TokenVerifier.asymmetricAlgorithms.contains(alg) else { throw JWKSError("algorithm \(alg) is not accepted") }
        do {
            let data = try JSONSerialization.data(withJSONObject: entry)
            let jwk = try JSONDecoder().decode(JWK.self, from: data)
            let collection = JWTKeyCollection()
            try await collection.add(jwk: jwk, isDefault: false)
            await collection.clearDefault()
            let algorithm = try await collection.getKey(for: JWKIdentifier(string: kid), alg: alg)
            guard algorithm.name == alg else { throw JWKSError("made a \(algorithm.name) key for alg \(alg)") }
            return VerificationKey(algorithm: algorithm, alg: alg)
        } catch let error as JWKSError {
            throw error
        } catch {
            throw JWKSError("unusable \(kty) key: \(error)")
        }
    }

    /// The algorithm a key without `alg` is used with, fixed by its type and curve.
    static func defaultAlgorithm(kty: String, crv: String?) -> String? {
        switch (kty, crv) {
        case ("RSA", _): "RS256"
        case ("EC", "P-256"): "ES256"
        case ("EC", "P-384"): "ES384"
        case ("EC", "P-521"): "ES512"
        case ("OKP", "Ed25519"): "EdDSA"
        default: nil
        }
    }
}

struct JWKSError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
