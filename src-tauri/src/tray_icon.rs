//! The tray icon's pixels. The icons are drawn once, as macOS template images (black, the shape in
//! alpha only) that the menu bar recolours for light and dark bars. Linux and Windows panels show
//! pixels as they are, where black on a dark panel is invisible: there the same shape is drawn
//! white with a dark outline, which reads on dark and light panels alike.

use tauri::image::Image;

use crate::tray_host::TEMPLATE_ICONS;

const IDLE_ICON: &[u8] = include_bytes!("../../icons/tray/idle@2x.png");
const GROWING_ICON: &[u8] = include_bytes!("../../icons/tray/growing@2x.png");

/// The outline's colour (RGB): a dark slate that stands out on light panels.
pub const OUTLINE_RGB: [u8; 3] = [0x1f, 0x29, 0x37];
/// The outline's width around the shape, pixels (of the 44 px image).
pub const OUTLINE_PX: usize = 2;

/// The icon of the idle (`growing == false`) or "a leak is growing" state, and whether it is a
/// template image.
///
/// # Errors
/// The embedded PNG does not decode (a build problem).
pub fn icon(growing: bool) -> tauri::Result<(Image<'static>, bool)> {
    let template = Image::from_bytes(if growing { GROWING_ICON } else { IDLE_ICON })?;
    if TEMPLATE_ICONS {
        return Ok((template, true));
    }
    let (w, h) = (template.width(), template.height());
    let rgba = outlined(template.rgba(), w as usize, h as usize);
    Ok((Image::new_owned(rgba, w, h), false))
}

/// The template `rgba` (shape in alpha) drawn white over a dark outline [`OUTLINE_PX`] wide: each
/// pixel's alpha is the largest alpha within that distance (a square dilation), its colour white
/// blended over [`OUTLINE_RGB`] by the shape's own alpha.
pub fn outlined(rgba: &[u8], width: usize, height: usize) -> Vec<u8> {
    let alpha = |x: usize, y: usize| rgba.get((y * width + x) * 4 + 3).copied().unwrap_or(0);
    let mut out = vec![0u8; width * height * 4];
    for y in 0..height {
        for x in 0..width {
            let shape = u32::from(alpha(x, y));
            let mut grown = 0u8;
            for ny in y.saturating_sub(OUTLINE_PX)..(y + OUTLINE_PX + 1).min(height) {
                for nx in x.saturating_sub(OUTLINE_PX)..(x + OUTLINE_PX + 1).min(width) {
                    grown = grown.max(alpha(nx, ny));
                }
            }
            let i = (y * width + x) * 4;
            for (c, dark) in OUTLINE_RGB.iter().enumerate() {
                let mixed = (255 * shape + u32::from(*dark) * (255 - shape)) / 255;
                out[i + c] = u8::try_from(mixed).unwrap_or(u8::MAX);
            }
            out[i + 3] = grown;
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn tray_icons_are_template_pngs_of_44_px() {
        for bytes in [IDLE_ICON, GROWING_ICON] {
            let img = Image::from_bytes(bytes).unwrap();
            assert_eq!((img.width(), img.height()), (44, 44));
            // template: every pixel is black, the shape lives in alpha only
            assert!(img
                .rgba()
                .chunks(4)
                .all(|p| p[..3] == [0, 0, 0] || p[3] == 0));
            assert!(img.rgba().chunks(4).any(|p| p[3] == 255));
        }
    }

    #[test]
    fn a_black_icon_on_a_dark_panel_gets_a_white_shape_with_a_dark_outline() {
        // a 1 px dot in the middle of a 7x7 template
        let mut rgba = vec![0u8; 7 * 7 * 4];
        rgba[(3 * 7 + 3) * 4 + 3] = 255;
        let out = outlined(&rgba, 7, 7);
        let px = |x: usize, y: usize| &out[(y * 7 + x) * 4..(y * 7 + x) * 4 + 4];
        assert_eq!(px(3, 3), [255, 255, 255, 255], "the shape is white");
        assert_eq!(
            px(1, 1),
            [0x1f, 0x29, 0x37, 255],
            "2 px around it is the outline"
        );
        assert_eq!(px(5, 3), [0x1f, 0x29, 0x37, 255]);
        assert_eq!(px(0, 3)[3], 0, "beyond is transparent");
        assert_eq!(px(6, 6)[3], 0);
    }

    #[test]
    fn the_real_icons_keep_their_shape_white_and_visible() {
        let (img, template) = icon(true).unwrap();
        assert_eq!(template, TEMPLATE_ICONS);
        if !TEMPLATE_ICONS {
            let px: Vec<&[u8]> = img.rgba().chunks(4).collect();
            assert!(px.iter().any(|p| p == &[255, 255, 255, 255]), "white shape");
            assert!(
                px.iter().any(|p| p[..3] == OUTLINE_RGB && p[3] == 255),
                "dark outline"
            );
        }
    }
}
