//! How an entity id becomes one file name (state records, the record
//! journal and the scan cache all name entities this way).

/// Encodes an entity id into a single file name: bytes outside
/// `[A-Za-z0-9:_@+,=-]` and `.` (except a leading one) become `%XX`.
pub fn encode_entity_id(id: &str) -> String {
    let mut encoded = String::with_capacity(id.len() + 8);
    for (index, byte) in id.bytes().enumerate() {
        let keep = byte.is_ascii_alphanumeric()
            || matches!(byte, b':' | b'_' | b'@' | b'+' | b',' | b'=' | b'-')
            || (byte == b'.' && index > 0);
        if keep {
            encoded.push(char::from(byte));
        } else {
            // Pushed digit by digit: `format!` would allocate per byte, and
            // an id is encoded several times per entity and run.
            const HEX: &[u8; 16] = b"0123456789ABCDEF";
            encoded.push('%');
            encoded.push(char::from(HEX[usize::from(byte >> 4)]));
            encoded.push(char::from(HEX[usize::from(byte & 0xf)]));
        }
    }
    encoded
}

/// Reverses [`encode_entity_id`]; `None` for a name it did not produce.
pub fn decode_entity_id(encoded: &str) -> Option<String> {
    let bytes = encoded.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = encoded.get(index + 1..index + 3)?;
            decoded.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            decoded.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(decoded).ok()
}
