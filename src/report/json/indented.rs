//! serde_json's `PrettyFormatter` for report.json, byte for byte, with each line's
//! break and indentation in one write, and DEL and C1 controls escaped.

/// serde_json's `PrettyFormatter` with its two-space indent, byte for byte, but writing
/// a line's break and indentation in one write where that writes one per level:
/// report.json is a million indented lines.
#[derive(Default)]
pub(super) struct Indented {
    pub(super) depth: usize,
    pub(super) has_value: bool,
}

impl Indented {
    fn line<W: ?Sized + std::io::Write>(&self, w: &mut W, first: bool) -> std::io::Result<()> {
        write_line(w, self.depth, first)
    }
}

/// `,\n` (or `\n` when `first`) and the indentation of `depth`, in one write up to 32
/// levels: report.json is a million indented lines.
pub(super) fn write_line<W: ?Sized + std::io::Write>(
    w: &mut W,
    depth: usize,
    first: bool,
) -> std::io::Result<()> {
    const LINE: &[u8; 66] = b",\n                                                                ";
    let from = usize::from(first);
    let width = 2 * depth;
    if 2 + width <= LINE.len() {
        return w.write_all(&LINE[from..2 + width]);
    }
    w.write_all(&LINE[from..2])?;
    (0..depth).try_for_each(|_| w.write_all(b"  "))
}

impl serde_json::ser::Formatter for Indented {
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(b"[")
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.depth -= 1;
        if self.has_value {
            self.line(w, true)?;
        }
        w.write_all(b"]")
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.line(w, first)
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(b"{")
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.depth -= 1;
        if self.has_value {
            self.line(w, true)?;
        }
        w.write_all(b"}")
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.line(w, first)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    /// A string's text, DEL and C1 controls escaped too (serde_json escapes C0 ones):
    /// a terminal showing the file acts on a raw C1 CSI as on ESC `[`.
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        crate::shown::write_json_fragment(w, fragment)
    }
}
