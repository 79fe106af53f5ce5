//! NVTX_EVENTS rows of training loops: ranges with registered names, domain definitions with
//! inline names, and JSON payloads inline (as `nsys export --include-json` writes them).

use anyhow::{anyhow, Result};
use rusqlite::types::ToSqlOutput;
use rusqlite::{Connection, Statement};

use crate::ddl::{column_names, create_table, insert_sql};
use crate::SchemaVersion;

pub(crate) const NVTX_EVENTS: &str = "NVTX_EVENTS";

/// `ENUM_NSYS_EVENT_TYPE` ids.
pub(crate) const PUSH_POP: i64 = 59;
pub(crate) const START_END: i64 = 60;
pub(crate) const DOMAIN_CREATE: i64 = 75;

/// One NVTX_EVENTS row; payload columns other than `jsonText` stay NULL.
#[derive(Clone, Debug)]
pub(crate) struct NvtxRow {
    pub start: i64,
    pub end: Option<i64>,
    pub event_type: i64,
    /// Start/end ranges only.
    pub range_id: Option<i64>,
    /// Inline text (domain names); ranges use `text_id`.
    pub text: Option<&'static str>,
    pub text_id: Option<i64>,
    pub global_tid: i64,
    pub end_global_tid: Option<i64>,
    pub domain_id: i64,
    pub color: Option<i64>,
    pub json: Option<String>,
}

/// What fills a column of the version's table.
#[derive(Clone, Copy)]
enum Column {
    Start,
    End,
    EventType,
    RangeId,
    Text,
    TextId,
    GlobalTid,
    EndGlobalTid,
    DomainId,
    Color,
    Json,
    /// Categories and the other payload members are not used.
    Null,
}

fn column(name: &str) -> Option<Column> {
    Some(match name {
        "start" => Column::Start,
        "end" => Column::End,
        "eventType" => Column::EventType,
        "rangeId" => Column::RangeId,
        "text" => Column::Text,
        "textId" => Column::TextId,
        "globalTid" => Column::GlobalTid,
        "endGlobalTid" => Column::EndGlobalTid,
        "domainId" => Column::DomainId,
        "color" => Column::Color,
        "jsonText" => Column::Json,
        "category" | "uint64Value" | "int64Value" | "doubleValue" | "uint32Value"
        | "int32Value" | "floatValue" | "jsonTextId" | "binaryData" => Column::Null,
        _ => return None,
    })
}

/// Inserts NVTX rows; the table is created on the first one.
pub(crate) struct NvtxWriter<'c> {
    statement: Statement<'c>,
    columns: Vec<Column>,
    rows: u64,
}

impl<'c> NvtxWriter<'c> {
    pub(crate) fn create(conn: &'c Connection, version: SchemaVersion) -> Result<Self> {
        create_table(conn, version, NVTX_EVENTS)?;
        let columns = column_names(conn, NVTX_EVENTS)?
            .iter()
            .map(|name| {
                column(name).ok_or_else(|| {
                    anyhow!("no value for column {NVTX_EVENTS}.{name} of schema {version}")
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let statement = conn.prepare(&insert_sql(NVTX_EVENTS, columns.len()))?;
        Ok(Self {
            statement,
            columns,
            rows: 0,
        })
    }

    pub(crate) fn insert(&mut self, row: &NvtxRow) -> Result<()> {
        for (index, column) in self.columns.iter().enumerate() {
            let value: ToSqlOutput<'_> = match column {
                Column::Start => row.start.into(),
                Column::End => optional(row.end),
                Column::EventType => row.event_type.into(),
                Column::RangeId => optional(row.range_id),
                Column::Text => row.text.map_or(null(), ToSqlOutput::from),
                Column::TextId => optional(row.text_id),
                Column::GlobalTid => row.global_tid.into(),
                Column::EndGlobalTid => optional(row.end_global_tid),
                Column::DomainId => row.domain_id.into(),
                Column::Color => optional(row.color),
                Column::Json => row.json.as_deref().map_or(null(), ToSqlOutput::from),
                Column::Null => null(),
            };
            self.statement.raw_bind_parameter(index + 1, value)?;
        }
        self.statement.raw_execute()?;
        self.rows += 1;
        Ok(())
    }

    pub(crate) fn rows(&self) -> u64 {
        self.rows
    }
}

fn null() -> ToSqlOutput<'static> {
    ToSqlOutput::Owned(rusqlite::types::Value::Null)
}

fn optional(value: Option<i64>) -> ToSqlOutput<'static> {
    value.map_or(null(), ToSqlOutput::from)
}
