import COpenSSL

/// HMAC-SHA256 (OpenSSL's), for HS256 tokens and webhook signatures.
enum HMACSHA256 {
    static func mac(_ input: [UInt8], key: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        _ = key.withUnsafeBytes { key in
            input.withUnsafeBytes { data in
                HMAC(EVP_sha256(), key.baseAddress, Int32(key.count), data.baseAddress?.assumingMemoryBound(to: UInt8.self), data.count, &output, &length)
            }
        }
        return Array(output[..<Int(length)])
    }
}
