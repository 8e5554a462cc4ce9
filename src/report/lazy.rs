//! The template context's tables as values made when a template reads them: a big
//! report's tables are most of its context (tens of thousands of stats of fourteen fields
//! each), and the templates read a few fields of each, so converting all of them before
//! rendering cost more than the rendering.
//!
//! Each lazy value answers exactly as the table's serde form converted whole would (the
//! context `docs/TEMPLATES.md` documents): the same fields in the same order, each made
//! from the same `Serialize` impl, so an override template cannot tell them apart, but
//! for `charts`, marked safe (`TableValue`). The tests check every field of every table
//! of the test reports against the whole conversion.

use std::sync::{Arc, OnceLock};

use minijinja::Value;
use minijinja::value::{Enumerator, Object, ObjectRepr, Serde};
use serde::ser::{self, Impossible, Serialize};

use super::{Row, Stat, Table};

/// `Report::tables`' serde form: lazy values when minijinja converts the report into a
/// template context, the tables themselves for any other serializer.
pub(super) fn serialize_tables<S: ser::Serializer>(
    tables: &[Arc<Table>],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    use ser::SerializeSeq;
    let mut seq = serializer.serialize_seq(Some(tables.len()))?;
    if minijinja::value::serializing_for_value() {
        for t in tables {
            seq.serialize_element(&Value::from_object(TableValue {
                table: Arc::clone(t),
                charts: OnceLock::new(),
            }))?;
        }
    } else {
        for t in tables {
            seq.serialize_element(&**t)?;
        }
    }
    seq.end()
}

/// A table: `rows` lazily, any other field converted when read.
#[derive(Debug)]
pub(super) struct TableValue {
    table: Arc<Table>,
    /// `charts`, as one list made once: a page reads them twice (`if`, then `for`).
    /// Each chart is already a safe string (`Chart`), shared rather than copied.
    charts: OnceLock<Value>,
}

impl TableValue {
    /// The table itself (the row filters write from it: `rows.rs`).
    pub(super) fn table(&self) -> &Table {
        &self.table
    }
}

impl Object for TableValue {
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.get_value_by_str(key.as_str()?)
    }
    fn get_value_by_str(self: &Arc<Self>, key: &str) -> Option<Value> {
        match key {
            "rows" => Some(Value::from_object(RowsValue(Arc::clone(&self.table)))),
            // The one difference from the whole conversion: the charts are markup
            // benchpipe escaped itself (`chart::svg`), so they are marked safe and a
            // template writes them as they are, without copying them again for `|safe`.
            "charts" => Some(
                self.charts
                    .get_or_init(|| {
                        let charts = self.table.charts.iter();
                        charts.map(super::Chart::value).collect::<Value>()
                    })
                    .clone(),
            ),
            // Read for every row by the embedded templates: made directly.
            "adaptive" => Some(Value::from(self.table.adaptive)),
            "any_flagged" => Some(Value::from(self.table.any_flagged)),
            _ => field(&*self.table, key),
        }
    }
    fn enumerate(self: &Arc<Self>) -> Enumerator {
        fields_of(&*self.table)
    }
}

/// A table's rows.
#[derive(Debug)]
struct RowsValue(Arc<Table>);

impl Object for RowsValue {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Seq
    }
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let row = key.as_usize()?;
        (row < self.0.rows.len()).then(|| {
            Value::from_object(RowValue {
                table: Arc::clone(&self.0),
                row,
            })
        })
    }
    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Seq(self.0.rows.len())
    }
}

/// One row of a table: `values` lazily, any other field converted when read.
#[derive(Debug)]
struct RowValue {
    table: Arc<Table>,
    row: usize,
}

impl RowValue {
    fn row(&self) -> &Row {
        &self.table.rows[self.row]
    }
}

impl Object for RowValue {
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.get_value_by_str(key.as_str()?)
    }
    fn get_value_by_str(self: &Arc<Self>, key: &str) -> Option<Value> {
        let row = self.row();
        // The fields the templates read of every row, made directly (as their serde
        // forms convert: a None as none); any other through serde.
        Some(match key {
            "values" => Value::from_object(StatsValue {
                table: Arc::clone(&self.table),
                row: self.row,
            }),
            "label" => Value::from(row.label.as_str()),
            "flagged" => Value::from(row.flagged.as_str()),
            "runs" => row
                .runs
                .as_deref()
                .map_or_else(|| Value::from(()), Value::from),
            _ => return field(row, key),
        })
    }
    fn enumerate(self: &Arc<Self>) -> Enumerator {
        fields_of(self.row())
    }
}

/// A row's values, one per column.
#[derive(Debug)]
struct StatsValue {
    table: Arc<Table>,
    row: usize,
}

impl Object for StatsValue {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Seq
    }
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let column = key.as_usize()?;
        let n = self.table.rows[self.row].values.len();
        (column < n).then(|| {
            Value::from_object(StatValue {
                table: Arc::clone(&self.table),
                row: self.row,
                column,
            })
        })
    }
    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Seq(self.table.rows[self.row].values.len())
    }
}

/// One value of a row, each field converted when read.
#[derive(Debug)]
struct StatValue {
    table: Arc<Table>,
    row: usize,
    column: usize,
}

impl StatValue {
    fn stat(&self) -> &Stat {
        &self.table.rows[self.row].values[self.column]
    }
}

impl Object for StatValue {
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.get_value_by_str(key.as_str()?)
    }
    fn get_value_by_str(self: &Arc<Self>, key: &str) -> Option<Value> {
        // The fields the templates read of every value, made directly (as their serde
        // forms convert: a None as none, a count as u64); any other through serde.
        let s = self.stat();
        let count = |n: usize| Value::from(n as u64);
        let number = |x: Option<f64>| x.map_or_else(|| Value::from(()), Value::from);
        Some(match key {
            "text" => Value::from(s.text.as_str()),
            "value" => Value::from(s.value.as_str()),
            "note" => Value::from(s.note.as_str()),
            "mean" => number(s.mean),
            "ci_half" => number(s.ci_half),
            "n" => count(s.n),
            "outliers" => count(s.outliers),
            "flagged" => count(s.flagged),
            "excluded" => count(s.excluded),
            _ => return field(s, key),
        })
    }
    fn enumerate(self: &Arc<Self>) -> Enumerator {
        fields_of(self.stat())
    }
}

/// The field `name` of a struct as its whole conversion has it: only that field's value
/// is converted (the others are passed over unserialized).
fn field<T: Serialize>(of: &T, name: &str) -> Option<Value> {
    let mut picker = Fields {
        want: Some(name),
        found: None,
        names: Vec::new(),
    };
    of.serialize(&mut picker).ok()?;
    picker.found
}

/// A struct's field names, in its serde order (the whole conversion's).
fn fields_of<T: Serialize>(of: &T) -> Enumerator {
    let mut picker = Fields {
        want: None,
        found: None,
        names: Vec::new(),
    };
    match of.serialize(&mut picker) {
        Ok(()) => Enumerator::Values(picker.names.into_iter().map(Value::from).collect()),
        Err(_) => Enumerator::Empty,
    }
}

/// A serializer that takes one struct's field names, or one field's value.
struct Fields<'n> {
    want: Option<&'n str>,
    found: Option<Value>,
    names: Vec<&'static str>,
}

/// What `Fields` is given that is not a struct: never, for the report's types.
#[derive(Debug)]
struct NotAStruct;

impl std::fmt::Display for NotAStruct {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("only a struct's fields are picked")
    }
}

impl std::error::Error for NotAStruct {}

impl ser::Error for NotAStruct {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        NotAStruct
    }
}

impl ser::SerializeStruct for &mut Fields<'_> {
    type Ok = ();
    type Error = NotAStruct;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), NotAStruct> {
        match self.want {
            Some(want) if want == key => self.found = Some(Value::from(Serde(value))),
            Some(_) => {}
            None => self.names.push(key),
        }
        Ok(())
    }
    fn end(self) -> Result<(), NotAStruct> {
        Ok(())
    }
}

/// Everything but a struct is refused.
macro_rules! refuse {
    ($($name:ident($($arg:ty),*)),* $(,)?) => {
        $(fn $name(self, $(_: $arg),*) -> Result<(), NotAStruct> { Err(NotAStruct) })*
    };
}

impl ser::Serializer for &mut Fields<'_> {
    type Ok = ();
    type Error = NotAStruct;
    type SerializeSeq = Impossible<(), NotAStruct>;
    type SerializeTuple = Impossible<(), NotAStruct>;
    type SerializeTupleStruct = Impossible<(), NotAStruct>;
    type SerializeTupleVariant = Impossible<(), NotAStruct>;
    type SerializeMap = Impossible<(), NotAStruct>;
    type SerializeStruct = Self;
    type SerializeStructVariant = Impossible<(), NotAStruct>;

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, NotAStruct> {
        Ok(self)
    }

    refuse!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_none(),
        serialize_unit(),
        serialize_unit_struct(&'static str),
        serialize_unit_variant(&'static str, u32, &'static str),
    );

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<(), NotAStruct> {
        Err(NotAStruct)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<(), NotAStruct> {
        Err(NotAStruct)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), NotAStruct> {
        Err(NotAStruct)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, NotAStruct> {
        Err(NotAStruct)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, NotAStruct> {
        Err(NotAStruct)
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, NotAStruct> {
        Err(NotAStruct)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, NotAStruct> {
        Err(NotAStruct)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, NotAStruct> {
        Err(NotAStruct)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, NotAStruct> {
        Err(NotAStruct)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether two template values are the same to a template: kind, truth, length,
    /// text, and for maps and sequences every key and item in order, recursively.
    fn same(path: &str, lazy: &Value, whole: &Value) {
        // The one difference from the whole conversion: a chart is its markup held
        // (`ChartMarkup`), where the conversion copies it into a string.
        if let Some(markup) = super::super::ChartMarkup::of(lazy) {
            assert_eq!(Some(markup), whole.as_str(), "{path}: chart");
            assert_eq!(lazy.to_string(), markup, "{path}: chart as text");
            return;
        }
        assert_eq!(lazy.kind(), whole.kind(), "{path}: kind");
        assert_eq!(lazy.is_true(), whole.is_true(), "{path}: truth");
        assert_eq!(lazy.len(), whole.len(), "{path}: length");
        match whole.kind() {
            minijinja::value::ValueKind::Map => {
                let keys = |v: &Value| -> Vec<Value> { v.try_iter().unwrap().collect() };
                let (lk, wk) = (keys(lazy), keys(whole));
                assert_eq!(lk, wk, "{path}: keys");
                for k in wk {
                    let name = k.as_str().unwrap();
                    let (l, w) = (lazy.get_attr(name).unwrap(), whole.get_attr(name).unwrap());
                    same(&format!("{path}.{name}"), &l, &w);
                }
            }
            minijinja::value::ValueKind::Seq => {
                let (l, w): (Vec<Value>, Vec<Value>) = (
                    lazy.try_iter().unwrap().collect(),
                    whole.try_iter().unwrap().collect(),
                );
                assert_eq!(l.len(), w.len(), "{path}: items");
                for (i, (l, w)) in l.iter().zip(&w).enumerate() {
                    same(&format!("{path}[{i}]"), l, w);
                    // Indexing gives the item iteration gives.
                    same(
                        &format!("{path}[{i}] by index"),
                        &lazy.get_item(&Value::from(i)).unwrap(),
                        w,
                    );
                }
                assert!(
                    lazy.get_item(&Value::from(l.len())).unwrap().is_undefined(),
                    "{path}: past the end"
                );
            }
            _ => {
                assert_eq!(lazy, whole, "{path}: value");
                assert_eq!(lazy.to_string(), whole.to_string(), "{path}: text");
            }
        }
    }

    /// Every table of the test reports reads lazily exactly as converted whole, and the
    /// report's context holds the lazy tables.
    #[test]
    fn lazy_tables_read_as_the_whole_conversion() {
        let reports = [super::super::tests_exports::full_report()];
        assert!(
            reports
                .iter()
                .any(|r| r.tables.iter().any(|t| !t.rows.is_empty())),
            "the sample reports have rows to compare"
        );
        for report in &reports {
            let context = Value::from(Serde(report));
            let tables = context.get_attr("tables").unwrap();
            assert_eq!(tables.len(), Some(report.tables.len()));
            for (i, (lazy, table)) in tables.try_iter().unwrap().zip(&report.tables).enumerate() {
                assert!(
                    lazy.downcast_object_ref::<TableValue>().is_some(),
                    "table {i} is lazy"
                );
                same(
                    &format!("tables[{i}]"),
                    &lazy,
                    &Value::from(Serde(&**table)),
                );
            }
        }
    }

    /// Charts are benchpipe's own escaped markup: either template writes them as they
    /// are, whether it asks for `|safe` or not; as text (`|string`) a chart is its
    /// markup, escaped like any text; and values in the rows stay escaped.
    #[test]
    fn charts_are_written_as_they_are_and_row_values_escaped() {
        let mut report = super::super::tests_exports::full_report();
        let table = Arc::make_mut(&mut report.tables[0]);
        table.charts = vec![super::super::Chart::new(
            "<svg><text>a &amp; b</text></svg>".into(),
        )];
        table.rows[0].label = "<b>".into();
        let page = "{% for t in tables[:1] %}{{ t.rows[0].label }}|{% for c in t.charts %}{{ c }}|{{ c|safe }}|{{ c|string }}{% endfor %}{% endfor %}";
        let chart = "<svg><text>a &amp; b</text></svg>";
        for (name, label, as_text) in [
            (
                "index.html",
                "&lt;b&gt;",
                "&lt;svg&gt;&lt;text&gt;a &amp;amp; b&lt;&#x2f;text&gt;&lt;&#x2f;svg&gt;",
            ),
            (
                "index.md",
                "&lt;b&gt;",
                "&lt;svg&gt;&lt;text&gt;a &amp;amp; b&lt;/text&gt;&lt;/svg&gt;",
            ),
        ] {
            let out = super::super::export::render_template(name, page, &report).unwrap();
            assert_eq!(
                String::from_utf8(out).unwrap(),
                format!("{label}|{chart}|{chart}|{as_text}\n"),
                "{name}"
            );
        }
    }

    #[test]
    fn a_field_a_struct_lacks_is_undefined_and_other_serializers_see_the_tables() {
        let report = &super::super::tests_exports::full_report();
        let context = Value::from(Serde(report));
        let table = context
            .get_attr("tables")
            .unwrap()
            .get_item(&Value::from(0))
            .unwrap();
        assert!(table.get_attr("no_such_field").unwrap().is_undefined());
        // JSON (any serializer but minijinja's) gets the tables' own fields.
        let json = serde_json::to_value(report).unwrap();
        assert_eq!(
            json["tables"][0]["id"],
            serde_json::json!(report.tables[0].id)
        );
    }
}
