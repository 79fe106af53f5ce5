use super::*;

#[test]
fn bsc_headers_are_read_as_the_format_has_them() {
    let line = "#Paraver (25/11/2026 at 06:41):1248337078_ns:0:1:2:(5:1,5:1)";
    let fixed = bsc_header(line).unwrap();
    assert_eq!(
        fixed,
        "#Paraver (25/11/2026 at 06:41):1248337078_ns:1(1):1:2(5:1,5:1)"
    );
    let header = parse_header(&fixed, &mut Vec::new()).unwrap();
    assert_eq!(header.appls[0].len(), 2);
    assert_eq!(bsc_header("#Paraver (x):10_ns:1(2):1:1(1:1)"), None);
}
