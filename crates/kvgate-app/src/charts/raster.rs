//! A chart as a PNG: its SVG document rendered here (resvg) with the machine's fonts, at twice its
//! size, so the picture saved is the drawing shown and its text is drawn whatever the webview can
//! do. The PNG carries the chart's title and description as text chunks.

use std::sync::{Arc, OnceLock};

use resvg::usvg::fontdb;
use resvg::{tiny_skia, usvg};

/// Pixels per SVG unit in a saved PNG: sharp on a high-density screen and on a slide.
pub const PNG_SCALE: f32 = 2.0;

/// Families that stand for the generic `sans-serif` (and the renderer's serif fallback) when the
/// chart's own list (system-ui, Segoe UI, Roboto, Arial) finds none, in order of preference.
const SANS: [&str; 7] = [
    "DejaVu Sans",
    "Liberation Sans",
    "Noto Sans",
    "Helvetica",
    "Arial",
    "Cantarell",
    "Ubuntu",
];

/// Why a chart could not be drawn as a PNG.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RasterError {
    #[error(
        "no font is installed to draw the chart's text: install one (DejaVu Sans, e.g. the \
         `fonts-dejavu-core` package) or save the chart as SVG"
    )]
    NoFont,
    #[error("the chart's SVG could not be read: {0}")]
    Svg(String),
    #[error("the chart is too large to draw ({0} × {1} px)")]
    Size(u32, u32),
    #[error("writing the PNG: {0}")]
    Png(String),
}

/// The machine's fonts, read once; `sans-serif` set to a family that is there.
fn fonts() -> Result<Arc<fontdb::Database>, RasterError> {
    static FONTS: OnceLock<Option<Arc<fontdb::Database>>> = OnceLock::new();
    FONTS
        .get_or_init(|| {
            let mut db = fontdb::Database::new();
            db.load_system_fonts();
            let family = SANS
                .iter()
                .find(|name| {
                    db.query(&fontdb::Query {
                        families: &[fontdb::Family::Name(name)],
                        ..Default::default()
                    })
                    .is_some()
                })
                .map(|name| (*name).to_owned())
                .or_else(|| {
                    db.faces()
                        .find_map(|f| f.families.first().map(|(name, _)| name.clone()))
                })?;
            db.set_sans_serif_family(family.clone());
            db.set_serif_family(family);
            Some(Arc::new(db))
        })
        .clone()
        .ok_or(RasterError::NoFont)
}

/// Renders a chart's SVG document to PNG bytes at [`PNG_SCALE`], on white paper, with the
/// document's `<title>` and `<desc>` as the PNG's `Title` and `Description`. Nothing outside the
/// document is read: a reference to another file draws nothing.
pub fn png(svg: &str) -> Result<Vec<u8>, RasterError> {
    let doc = usvg::roxmltree::Document::parse(svg).map_err(|e| RasterError::Svg(e.to_string()))?;
    let text_of = |tag: &str| {
        doc.root_element()
            .children()
            .find(|n| n.has_tag_name(tag))
            .and_then(|n| n.text())
            .unwrap_or_default()
            .to_owned()
    };
    let (title, description) = (text_of("title"), text_of("desc"));
    let options = usvg::Options {
        fontdb: fonts()?,
        image_href_resolver: usvg::ImageHrefResolver {
            resolve_string: Box::new(|_, _| None),
            ..Default::default()
        },
        ..Default::default()
    };
    let tree =
        usvg::Tree::from_xmltree(&doc, &options).map_err(|e| RasterError::Svg(e.to_string()))?;
    let size = tree.size();
    let (w, h) = (
        (size.width() * PNG_SCALE).ceil() as u32,
        (size.height() * PNG_SCALE).ceil() as u32,
    );
    let mut pixmap = tiny_skia::Pixmap::new(w, h).ok_or(RasterError::Size(w, h))?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        tiny_skia::Transform::from_scale(PNG_SCALE, PNG_SCALE),
        &mut pixmap.as_mut(),
    );
    let rgba: Vec<u8> = pixmap
        .pixels()
        .iter()
        .flat_map(|p| {
            let c = p.demultiply();
            [c.red(), c.green(), c.blue(), c.alpha()]
        })
        .collect();

    let err = |e: png::EncodingError| RasterError::Png(e.to_string());
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, w, h);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    // 96 dpi × the scale: printed or placed, the picture keeps the chart's natural size.
    let per_metre = (96.0 * PNG_SCALE / 0.0254).round() as u32;
    encoder.set_pixel_dims(Some(png::PixelDimensions {
        xppu: per_metre,
        yppu: per_metre,
        unit: png::Unit::Meter,
    }));
    // iTXt: UTF-8, so a title with Δ or a non-Latin name is kept as written.
    encoder.add_itxt_chunk("Title".into(), title).map_err(err)?;
    encoder
        .add_itxt_chunk("Description".into(), description)
        .map_err(err)?;
    encoder
        .add_text_chunk("Software".into(), "KV Gate".into())
        .map_err(err)?;
    let mut writer = encoder.write_header().map_err(err)?;
    writer.write_image_data(&rgba).map_err(err)?;
    writer.finish().map_err(err)?;
    Ok(out)
}
